package io.kvferry;

import java.util.EnumMap;
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
 * @param failures failed rooms by cause (every cause present, zero when none)
 * @param connections connected peer ranks (a rank reached over several stripes counts once)
 * @param heartbeatLosses connections closed because the peer went silent (no heartbeat for two intervals)
 */
public record KVStats(long bytesSent, long bytesReceived, long pagesSent, long roomsSucceeded, long roomsFailed,
		Map<KVPoll, Integer> liveRooms, Map<FailureCause, Long> failures, int connections, long heartbeatLosses) {

	public KVStats {
		liveRooms = Map.copyOf(liveRooms);
		Map<FailureCause, Long> all = new EnumMap<>(FailureCause.class);
		for (FailureCause c : FailureCause.values()) {
			all.put(c, failures.getOrDefault(c, 0L));
		}
		failures = Map.copyOf(all);
	}
}
