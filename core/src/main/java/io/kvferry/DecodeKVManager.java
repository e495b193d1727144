package io.kvferry;

import java.time.Duration;

import reactor.core.publisher.Mono;

/**
 * A decode rank's manager: resolves prefill instances through their bootstrap server, connects to their ranks, and
 * receives each room's pages through a {@link KVReceiver}. Built by {@link KVManagerSpec#decode()}.
 */
public interface DecodeKVManager extends KVManager {

	/**
	 * Opens a room whose KV the prefill DP group {@code room mod DP size} holds. Never blocks and never queues: a room
	 * over a bound of rooms in flight ({@link DecodeSpec#maxRooms}) comes back already failed, its
	 * {@code completion()} erroring with a {@link KVOverloadException} that says when to retry.
	 *
	 * @param bootstrapAddr the prefill instance's bootstrap server
	 * @param room the room
	 * @return a new receiver, already resolving the prefill instance
	 * @throws IllegalStateException for a room that already has a receiver, or when the manager is closed
	 */
	KVReceiver receiver(HostPort bootstrapAddr, long room);

	/**
	 * Opens a room whose KV a given prefill DP rank holds (SGLang's {@code disagg_prefill_dp_rank} hint). Refuses a room
	 * over a bound as {@link #receiver(HostPort, long)} does.
	 *
	 * @param bootstrapAddr the prefill instance's bootstrap server
	 * @param room the room
	 * @param prefillDpRank the prefill DP rank, 0 to its DP size − 1
	 * @return a new receiver, already resolving the prefill instance
	 * @throws IllegalStateException for a room that already has a receiver, or when the manager is closed
	 */
	KVReceiver receiver(HostPort bootstrapAddr, long room, int prefillDpRank);

	/**
	 * Re-registers this rank's regions without restarting the manager, lazily (an engine that paused serving to
	 * update weights or resize its pool): on subscription the manager admits no new rooms (a new receiver is born
	 * failed with {@link FailureCause#DRAINING} and a reason that names the re-registration), waits until no byte can
	 * land in the old regions any more (every room it held ended, a failed one once its prefill ranks went quiet),
	 * registers {@code args}' regions with the transport, makes them the ones every later room lands in, tells every
	 * connected prefill rank the new layout (its sizes and page counts) over the connection it has, releases the old
	 * registration, and admits rooms again. Rooms still live when {@code deadline} passes are aborted with
	 * {@link FailureCause#DRAINING}. After completion no byte lands in the old regions: the engine may free them.
	 *
	 * <p>Only the regions may change: their addresses, item lengths and item counts. The rest of the layout (engine
	 * rank, page size, heads, dtype, layers, how many regions of each kind, state kinds, model) is the manager's for
	 * its life.
	 *
	 * @param args the new regions, with the layout this manager started with
	 * @param deadline how long rooms in flight may take before they are aborted; zero aborts them at once
	 * @return the regions' new generation (1 for the first re-registration, one more for each after it), on the
	 *         callback scheduler; errors with an {@link IllegalStateException} when the manager is closed or already
	 *         re-registering, or with the transport's {@link KVFerryException} when it cannot register the new regions
	 *         (the old ones stay in use); cancelled, the old regions stay in use
	 * @throws IllegalArgumentException when {@code args} changes more than the regions, or for a negative deadline
	 */
	Mono<Integer> reregister(KVArgs args, Duration deadline);
}
