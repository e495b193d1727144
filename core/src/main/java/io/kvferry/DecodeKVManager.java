package io.kvferry;

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
}
