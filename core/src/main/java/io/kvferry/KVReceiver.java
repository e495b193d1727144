package io.kvferry;

import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The decode side of one room on one rank. Made by {@link DecodeKVManager#receiver}; resolves the prefill instance through
 * its bootstrap server right away (Bootstrapping → WaitingForInput). Every method returns at once.
 *
 * <pre>{@code
 * KVReceiver receiver = manager.receiver(bootstrapAddr, room);
 * receiver.sendMetadata(destPages, auxRow, new int[0]);
 * receiver.completion().subscribe(ok -> {}, err -> log.warn("room failed", err));
 * }</pre>
 */
public interface KVReceiver {

	long room();

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
	 * How the room's bytes travel: the path to its prefill ranks (TCP with its stripes, shared memory, TLS), known once
	 * they are connected and kept after the room ended. Where ranks differ, the path all of them share
	 * ({@link RoomPath#and}).
	 *
	 * <pre>{@code
	 * receiver.completion().subscribe(ok -> log.info("room {} came by {}", room, receiver.path()));
	 * }</pre>
	 *
	 * @return the room's path, or {@link RoomPath#UNKNOWN} before its prefill ranks are connected
	 */
	default RoomPath path() {
		return RoomPath.UNKNOWN;
	}

	/**
	 * Where the room's time went on this rank: bootstrap until its prefill ranks were connected, waiting until the first
	 * byte landed, on the wire until the last, then landing until Success. Fixed when the room ends (before
	 * {@link #completion()} signals).
	 *
	 * <pre>{@code
	 * receiver.completion().subscribe(ok -> log.info("room {}: {}", room, receiver.phases()));
	 * }</pre>
	 *
	 * @return the room's phases, or {@link RoomPhases#NONE} before it ended
	 */
	default RoomPhases phases() {
		return RoomPhases.NONE;
	}

	/** @return the room's current state (latched once terminal) */
	KVPoll poll();

	/** @return the room's states: the current one first, then each change; completes after the terminal one */
	Flux<KVPoll> states();

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

	/**
	 * The room's outcome. A failed or aborted room errors only once its pages are safe to reuse: every prefill rank
	 * that may write them acknowledged, or its connection is gone, so no byte can land in them any more.
	 *
	 * @return completes on {@link KVPoll#SUCCESS}, errors with {@link KVTransferException} on failure
	 */
	Mono<Void> completion();

	/**
	 * Fails the room and tells every prefill rank. The call is the action: the room fails before this method
	 * returns, and nobody has to subscribe to anything, so an engine that gives up on a request just calls it. Never
	 * blocks; idempotent (a second call, or one on a room that already ended, does nothing and keeps the first
	 * reason). The pages may be reused once {@link #completion()} errors.
	 *
	 * <pre>{@code
	 * receiver.abort("request cancelled by the client");
	 * receiver.completion().subscribe(null, err -> engine.free(destPages));
	 * }</pre>
	 *
	 * @param reason why; every prefill rank sees it in the room's failure
	 */
	void abort(String reason);
}
