package io.kvferry;

import java.util.Map;

/**
 * A snapshot of one manager's counters since it started, for metrics binders and logs. Cheap to take.
 *
 * @param bytesSent KV, aux and state bytes handed to the transport (prefill)
 * @param bytesReceived bytes written into this rank's regions (decode)
 * @param pagesSent pages sent, counted once per destination (prefill)
 * @param roomsSucceeded rooms that ended in {@link KVPoll#SUCCESS}
 * @param roomsFailed rooms that ended in {@link KVPoll#FAILED}
 * @param liveRooms rooms by current state (non-terminal states only)
 * @param failuresByCategory failed rooms by {@link #failureCategory(String)}
 * @param connections open peer connections
 * @param heartbeatLosses connections closed because the peer went silent (no heartbeat for two intervals)
 */
public record KVStats(long bytesSent, long bytesReceived, long pagesSent, long roomsSucceeded, long roomsFailed,
		Map<KVPoll, Integer> liveRooms, Map<String, Long> failuresByCategory, int connections, long heartbeatLosses) {

	/** Every value {@link #failureCategory(String)} returns. */
	public static final java.util.List<String> FAILURE_CATEGORIES = java.util.List.of("timeout", "aborted",
			"connection_lost", "incompatible", "bootstrap", "peer_failed", "closed", "other");

	public KVStats {
		liveRooms = Map.copyOf(liveRooms);
		failuresByCategory = Map.copyOf(failuresByCategory);
	}

	/**
	 * Sorts a failure reason into a small, fixed set of categories (reasons themselves carry room ids and addresses,
	 * too many distinct values for a metric tag).
	 *
	 * @param reason a room's failure reason
	 * @return one of {@code timeout}, {@code aborted}, {@code connection_lost}, {@code incompatible},
	 *         {@code bootstrap}, {@code peer_failed}, {@code closed}, {@code other}
	 */
	public static String failureCategory(String reason) {
		String r = reason == null ? "" : reason;
		if (r.contains("timed out")) {
			return "timeout";
		}
		if (r.contains("Aborted") || r.contains("abort")) {
			return "aborted";
		}
		if (r.contains("Lost connection") || r.contains("heartbeat")) {
			return "connection_lost";
		}
		if (r.contains("mismatch") || r.contains("rejected") || r.contains("do not divide")) {
			return "incompatible";
		}
		if (r.contains("Could not bootstrap")) {
			return "bootstrap";
		}
		if (r.contains("was closed")) {
			return "closed";
		}
		if (r.startsWith("Prefill rank") || r.contains("failed room")) {
			return "peer_failed";
		}
		return "other";
	}
}
