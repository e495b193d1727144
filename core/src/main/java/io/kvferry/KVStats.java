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
 * @param peerBreakersOpen prefill ranks whose circuit breaker is open now: their new rooms fail at once with
 *        {@link FailureCause#PEER_UNAVAILABLE} (decode)
 * @param peerBreakersOpened times a prefill rank's circuit breaker opened (decode)
 * @param peerProbesFailed probes of such ranks that failed (decode); one that succeeds readmits its rank
 */
public record KVStats(long bytesSent, long bytesReceived, long pagesSent, long roomsSucceeded, long roomsFailed,
		Map<KVPoll, Integer> liveRooms, Map<FailureCause, Long> failures, int connections, long heartbeatLosses,
		int peerBreakersOpen, long peerBreakersOpened, long peerProbesFailed) {

	public KVStats {
		liveRooms = Map.copyOf(liveRooms);
		Map<FailureCause, Long> all = new EnumMap<>(FailureCause.class);
		for (FailureCause c : FailureCause.values()) {
			all.put(c, failures.getOrDefault(c, 0L));
		}
		failures = Map.copyOf(all);
	}

	/** Statistics without circuit breakers (a prefill manager's). */
	public KVStats(long bytesSent, long bytesReceived, long pagesSent, long roomsSucceeded, long roomsFailed,
			Map<KVPoll, Integer> liveRooms, Map<FailureCause, Long> failures, int connections, long heartbeatLosses) {
		this(bytesSent, bytesReceived, pagesSent, roomsSucceeded, roomsFailed, liveRooms, failures, connections,
				heartbeatLosses, 0, 0, 0);
	}
}
