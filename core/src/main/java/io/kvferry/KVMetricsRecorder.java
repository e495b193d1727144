package io.kvferry;

import org.jspecify.annotations.Nullable;

/**
 * What a manager reports as its rooms open and end, for metrics: the manager calls it at each of these transitions, so
 * nothing is lost to a slow subscriber as it could be on {@link KVManager#events()}. Calls come on the manager's
 * callback scheduler (never under a library lock), one per transition; an implementation must not block.
 * {@code kvferry-metrics-micrometer} has one for Micrometer.
 */
public interface KVMetricsRecorder {

	/** Records nothing; the default. */
	KVMetricsRecorder NONE = new KVMetricsRecorder() {
	};

	/**
	 * A room reached its first state on this manager.
	 *
	 * @param manager the manager's name
	 * @param mode its role
	 */
	default void roomOpened(String manager, DisaggregationMode mode) {
	}

	/**
	 * A room ended on this manager.
	 *
	 * <pre>{@code
	 * public void roomEnded(RoomEnded ended) {
	 *     log.info("{} room {} after {} ms by {}: {}", ended.mode(), ended.outcome(), ended.durationNanos() / 1_000_000,
	 *             ended.path(), ended.phases());
	 * }
	 * }</pre>
	 *
	 * @param ended what the room's end tells
	 */
	default void roomEnded(RoomEnded ended) {
	}

	/**
	 * How a room ended on one manager: one value, so that what a recorder is told can grow without changing its
	 * signature.
	 *
	 * @param manager the manager's name
	 * @param mode its role
	 * @param outcome {@link KVPoll#SUCCESS} or {@link KVPoll#FAILED}
	 * @param cause why it failed, or null on success
	 * @param durationNanos from the room's first state to its last
	 * @param path how the room travelled ({@link KVRoom#path()}); {@link RoomPath#UNKNOWN} for a room that ended before
	 *        its peers were connected
	 * @param phases the room's phases on this manager, which add up to {@code durationNanos}
	 */
	record RoomEnded(String manager, DisaggregationMode mode, KVPoll outcome, @Nullable FailureCause cause,
			long durationNanos, RoomPath path, RoomPhases phases) {
	}
}
