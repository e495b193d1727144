/**
 * Whole rooms with every byte checked, for programs and tests alike: a model's KV shape ({@link ModelShape}), one
 * rank's memory laid out as SGLang lays it out with pattern fill and byte-exact checks ({@link RankMemory},
 * {@link Patterns}), page allocation ({@link PageAllocator}) and an in-process prefill and decode instance of any
 * parallel layout that runs rooms end to end ({@link KVCluster}), and many instances of each that run rooms between
 * any pair ({@link KVFleet}).
 *
 * <p>It needs only kvferry's core: the command line's demo and bench ship it, and the test kit builds its scenarios on
 * it.
 */
@NullMarked
package io.kvferry.harness;

import org.jspecify.annotations.NullMarked;
