package io.kvferry;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One rank's KV transfer manager, in {@link DisaggregationMode#PREFILL} or {@link DisaggregationMode#DECODE} mode.
 * Created with {@link KVManagerSpec}; owns its listening endpoint (prefill), its peer connections and its rooms.
 */
public interface KVManager extends Disposable {

	DisaggregationMode mode();

	KVArgs kvArgs();

	ParallelLayout layout();

	/** @return the endpoint decode ranks connect to (prefill); for decode, the bind address if any, else null */
	HostPort endpoint();

	/**
	 * @param room the room
	 * @return a new sender in Bootstrapping (or further, if decode already asked for the room)
	 * @throws IllegalStateException on a decode manager or for a room that already has a live sender
	 */
	KVSender sender(long room);

	/**
	 * @param bootstrapAddr the prefill instance's bootstrap server
	 * @param room the room
	 * @param prefillDpRank the prefill DP rank holding the KV, or null for room mod prefill DP size
	 * @return a new receiver, already resolving the prefill instance
	 * @throws IllegalStateException on a prefill manager or for a room that already has a live receiver
	 */
	KVReceiver receiver(HostPort bootstrapAddr, long room, Integer prefillDpRank);

	/** @return the state of {@code room}, or null when the manager does not know it */
	KVPoll status(long room);

	/**
	 * Every state change of every room, hot: a subscriber sees changes from its subscription on. A subscriber that
	 * cannot keep up loses the oldest buffered events beyond the configured buffer (it never slows transfers); use
	 * {@link KVSender#states()} or {@link KVReceiver#states()} for a room's guaranteed terminal state.
	 */
	Flux<KVStatusEvent> events();

	/**
	 * Prefill only: rooms decode is ready for, hot, with the same overflow rule as {@link #events()}.
	 */
	Flux<RoomRequest> roomRequests();

	/** @return the manager's counters since it started */
	KVStats stats();

	/** Fails every live room, closes connections and the listener. */
	Mono<Void> disposeLater();
}
