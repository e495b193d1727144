package io.kvferry;

import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;

/**
 * The decode side of one room on one rank. Made by {@link DecodeKVManager#receiver}; resolves the prefill instance through
 * its bootstrap server right away (Bootstrapping → WaitingForInput). Every method returns at once.
 *
 * <pre>{@code
 * KVReceiver receiver = manager.receiver(bootstrapAddr, room);
 * receiver.sendMetadata(destPages, auxRow, new int[0]);
 * receiver.completion().subscribe(ok -> {}, err -> log.warn("room failed", err));
 * }</pre>
 *
 * <p>Its state, outcome, path, phases and abort are every room's ({@link KVRoom}): its completion errors once its pages
 * are safe to reuse, and its path is known once its prefill ranks are connected.
 */
public interface KVReceiver extends KVRoom {

	/**
	 * Tells the prefill ranks where this room's KV goes. May be called while still bootstrapping.
	 *
	 * @param pageIndices destination pages, in order
	 * @param auxIndex destination aux row, or -1
	 * @param stateIndices destination state slots (empty when none)
	 * @throws IllegalStateException when called twice
	 */
	void sendMetadata(int[] pageIndices, int auxIndex, int[] stateIndices);

	/**
	 * Tells the prefill ranks where this room's KV goes when decode already holds the first
	 * {@code decodePrefixLen} tokens (its prefix cache; SGLang's {@code decode_prefix_len}): prefill sends from that
	 * page on, and {@code pageIndices} are the destinations of the pages after the prefix. A full hit names no page:
	 * then only state and aux move, and the room still ends in Success. With hybrid-model state
	 * ({@link KVArgs#stateComponents()}), {@code stateIndices} has one list per component, in declared order (a Mamba
	 * slot, SWA window pages, DSA pages); without declared kinds, one list for every state region.
	 *
	 * @param decodePrefixLen tokens decode already holds; a multiple of the page size
	 * @param pageIndices destination pages of the rest, in order
	 * @param auxIndex destination aux row, or -1
	 * @param stateIndices one destination index list per state component
	 * @throws IllegalArgumentException for a prefix that is not whole pages, or another number of state lists
	 * @throws IllegalStateException when called twice
	 */
	void sendMetadata(int decodePrefixLen, int[] pageIndices, int auxIndex, int[][] stateIndices);

	/**
	 * Adds the engine's own check to the room's verdict: once decode's ledger found every promised byte landed, and
	 * before Success, decode calls {@code check} on the callback scheduler (never under a library lock); an answer
	 * other than null fails the room {@link FailureCause#MISMATCH}, its reason ending with that answer. For what only
	 * the engine can judge: a room of tensors checks its manifest ({@link TensorPlacement#receive}), a benchmark the
	 * pattern its synthetic source wrote. Call it before {@code sendMetadata}; a second call replaces the first.
	 *
	 * <pre>{@code
	 * receiver.verify(() -> engine.looksRight(pages) ? null : "page 3 holds another request's tokens");
	 * receiver.sendMetadata(pages, auxRow, new int[0]);
	 * }</pre>
	 *
	 * @param check what differs from what the engine expected, or null when nothing does; it may read the room's
	 *        pages, which hold every byte then and take no more. One that throws fails the room as a mismatch too.
	 */
	void verify(Supplier<@Nullable String> check);

	/**
	 * Presents the request owner's claim with the room's requests: the first decode's claim lets the owner move the
	 * room to a replacement decode later, and a replacement's claim takes the room over from the decode that held it,
	 * served from the pages prefill still holds under the room's lease ({@link RoomHandoff}). A replacement whose
	 * claim prefill refuses fails {@link FailureCause#PROTOCOL}; one that comes after prefill let the room's pages go
	 * (its lease ran out, or the room ended there) fails {@link FailureCause#LEASE_EXPIRED} at once, and the engine
	 * recomputes the request. Call it before {@code sendMetadata}; without it the room never moves.
	 *
	 * @param claim what the owner handed this decode for the room
	 */
	void claim(RoomClaim claim);

	/**
	 * The room's landed layers, so that a decode engine can start on early layers and a scheduler can watch progress.
	 * A layer (counted in this rank's KV buffers: main-model layers, then draft layers that prefill fills) is emitted
	 * once, when every byte of it is in place from every prefill rank that writes it (MHA: its K and V buffer), in
	 * whatever order the ranks finish. Completes after the room's terminal state, as {@link #states()} does: after
	 * Success every layer was emitted, after a failure only those complete before it (check {@link #poll()} or
	 * {@link #completion()} for the outcome; the failed room's pages stay the engine's to free only on completion's
	 * error). Hot: layers land whether or not anyone subscribed; a late subscriber first gets those already landed.
	 * Subscribers are called on the callback scheduler, never under a library lock.
	 *
	 * <pre>{@code
	 * receiver.layers().subscribe(layer -> engine.layerReady(room, layer));
	 * }</pre>
	 *
	 * @return each landed layer's index, once; completes once the room ended
	 */
	Flux<Integer> layers();
}
