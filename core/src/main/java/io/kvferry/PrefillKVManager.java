package io.kvferry;

import reactor.core.publisher.Flux;

/**
 * A prefill rank's manager: listens for decode ranks, is registered with its bootstrap server, and sends each room's
 * pages through a {@link KVSender}. Built by {@link KVManagerSpec#prefill()}.
 */
public interface PrefillKVManager extends KVManager {

	/** @return the endpoint decode ranks connect to, as registered with the bootstrap server */
	HostPort endpoint();

	/**
	 * @param room the room
	 * @return a new sender in Bootstrapping (or further, if decode already asked for the room); born failed, with how
	 *         the room ended, when it ended before the engine got here (decode gave it up, a request refused, a lease
	 *         expired, the decode rank went away, the rank drains): a room whose request was emitted can always be
	 *         claimed once
	 * @throws IllegalStateException for a room that already had a sender, or when the manager is closed
	 */
	KVSender sender(long room);

	/**
	 * Rooms decode is ready for, hot, on the callback scheduler, with a per-subscriber buffer of the spec's
	 * {@code eventBufferSize}: a request a slow subscriber loses fails its room (when it has no sender yet) rather
	 * than leaving it waiting. Requests that come while nobody subscribes (a decode rank can ask as soon as the
	 * listener is bound, before the start returns) wait for the next subscriber, up to that many of them; older ones
	 * fail their rooms the same way.
	 */
	Flux<RoomRequest> roomRequests();
}
