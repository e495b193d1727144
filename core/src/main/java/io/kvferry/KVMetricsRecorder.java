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
	 * @param manager the manager's name
	 * @param mode its role
	 * @param outcome {@link KVPoll#SUCCESS} or {@link KVPoll#FAILED}
	 * @param cause why it failed, or null on success
	 * @param durationNanos from the room's first state to its last
	 */
	default void roomEnded(String manager, DisaggregationMode mode, KVPoll outcome, @Nullable FailureCause cause,
			long durationNanos) {
	}

	/**
	 * A room ended on this manager, with the path its bytes took. The manager calls this form; the default passes
	 * on to the one without the path.
	 *
	 * @param manager the manager's name
	 * @param mode its role
	 * @param outcome {@link KVPoll#SUCCESS} or {@link KVPoll#FAILED}
	 * @param cause why it failed, or null on success
	 * @param durationNanos from the room's first state to its last
	 * @param path how the room travelled ({@link KVReceiver#path()}, {@link KVSender#path()}); {@link RoomPath#UNKNOWN}
	 *        for a room that ended before its peers were connected
	 */
	default void roomEnded(String manager, DisaggregationMode mode, KVPoll outcome, @Nullable FailureCause cause,
			long durationNanos, RoomPath path) {
		roomEnded(manager, mode, outcome, cause, durationNanos);
	}

	/**
	 * A room ended on this manager, with its path and where its time went. The manager calls this form; the default
	 * passes on to the one without the phases.
	 *
	 * @param manager the manager's name
	 * @param mode its role
	 * @param outcome {@link KVPoll#SUCCESS} or {@link KVPoll#FAILED}
	 * @param cause why it failed, or null on success
	 * @param durationNanos from the room's first state to its last
	 * @param path how the room travelled, {@link RoomPath#UNKNOWN} when it ended before its peers were connected
	 * @param phases the room's phases on this manager, which add up to {@code durationNanos}
	 */
	default void roomEnded(String manager, DisaggregationMode mode, KVPoll outcome, @Nullable FailureCause cause,
			long durationNanos, RoomPath path, RoomPhases phases) {
		roomEnded(manager, mode, outcome, cause, durationNanos, path);
	}
}
