/**
 * Rogue peers for stateful property tests: a prefill rank that sends decode any frame with any field, in any order, on
 * any stripe ({@link io.kvferry.test.rogue.RoguePrefillPeer}), and a decode rank that sends prefill any request, abort,
 * renewal or join ({@link io.kvferry.test.rogue.RogueDecodePeer}), each beside well-behaved ranks of the real engine.
 * Their worlds ({@link io.kvferry.test.rogue.RoguePrefillWorld}, {@link io.kvferry.test.rogue.RogueDecodeWorld}) keep a
 * model of what was registered, asked and written and check the invariants after every step; the jqwik actions that
 * drive them are in {@link io.kvferry.test.rogue.RoguePrefillActions} and
 * {@link io.kvferry.test.rogue.RogueDecodeActions}. A transport module supplies how a rogue reaches the wire: over the
 * SPI ({@link io.kvferry.test.rogue.SpiRogue}, well-formed messages only) or byte by byte.
 */
@NullMarked
package io.kvferry.test.rogue;

import org.jspecify.annotations.NullMarked;
