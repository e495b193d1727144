/**
 * kvferry's public API: the model (rooms' {@link io.kvferry.KVPoll} states, {@link io.kvferry.KVArgs} and
 * {@link io.kvferry.MemoryRegion}s, {@link io.kvferry.ParallelLayout}, {@link io.kvferry.HostPort}), the KV manager
 * with its senders and receivers ({@link io.kvferry.KVManagerSpec} builds one), and the exception hierarchy rooted at
 * {@link io.kvferry.KVFerryException}.
 */
@NullMarked
package io.kvferry;

import org.jspecify.annotations.NullMarked;
