package io.kvferry;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * What both sides of a room offer, whatever their role: its id, its state and outcome, how it travelled and where its
 * time went, and the abort. A {@link KVSender} is a prefill rank's room, a {@link KVReceiver} a decode rank's; each
 * adds what only its role does. Every method returns at once, and subscribers are called on the manager's callback
 * scheduler, never under a library lock.
 *
 * <pre>{@code
 * KVRoom room = sender;   // or receiver
 * room.completion().subscribe(ok -> log.info("room {} went by {}: {}", room.room(), room.path(), room.phases()),
 *         err -> log.warn("room {} failed", room.room(), err));
 * }</pre>
 */
public interface KVRoom {

	/** @return the room's id, shared by its prefill and decode sides */
	long room();

	/** @return the room's current state (latched once terminal) */
	KVPoll poll();

	/** @return the room's states: the current one first, then each change; completes after the terminal one */
	Flux<KVPoll> states();

	/**
	 * The room's outcome. A failed or aborted room errors only once the engine may reuse the room's memory: on prefill
	 * once the failure was handed to every decode rank's connection (written behind the room's last block, or that
	 * connection is gone), so that no queued block reads the source pages any more; on decode once every prefill rank
	 * that may write the pages acknowledged, or its connection is gone, so that no byte can land in them any more.
	 *
	 * @return completes on {@link KVPoll#SUCCESS}, errors with {@link KVTransferException} on failure
	 */
	Mono<Void> completion();

	/**
	 * Fails the room here and tells its peers. The call is the action: the room fails before this method returns, and
	 * nobody has to subscribe to anything, so an engine that gives up on a request just calls it. Never blocks;
	 * idempotent (a second call, or one on a room that already ended, does nothing and keeps the first reason). The
	 * room's memory may be reused once {@link #completion()} errors.
	 *
	 * <pre>{@code
	 * room.abort("request cancelled by the client");
	 * room.completion().subscribe(null, err -> engine.free(room.room()));
	 * }</pre>
	 *
	 * @param reason why; the peers see it in the room's failure
	 */
	void abort(String reason);

	/**
	 * How the room's bytes travel: the path to its peers (TCP with its stripes, shared memory, TLS), known once they are
	 * connected (on prefill: once a decode rank asked for the room) and kept after the room ended. Where peers differ,
	 * the path all of them share ({@link RoomPath#and}).
	 *
	 * @return the room's path, or {@link RoomPath#UNKNOWN} before its peers are known
	 */
	RoomPath path();

	/**
	 * Where the room's time went on this rank, phase by phase ({@link RoomPhases.Phase}). Fixed when the room ends
	 * (before {@link #completion()} signals).
	 *
	 * @return the room's phases, or {@link RoomPhases#NONE} before it ended
	 */
	RoomPhases phases();
}
