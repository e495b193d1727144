package io.kvferry;

import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * One state change of one room on one manager, as published on {@link KVManager#events()}.
 *
 * @param room the room
 * @param previous the state before, or {@code null} when the room was new
 * @param current the state after
 * @param cause why it failed, or {@code null} unless {@code current} is {@link KVPoll#FAILED}
 * @param reason why it failed; empty unless {@code current} is {@link KVPoll#FAILED}
 * @param timestampNanos {@link System#nanoTime()}-based time of the change
 * @param phases where the room's time went on this manager, on a terminal event ({@link KVPoll#SUCCESS} or
 *        {@link KVPoll#FAILED}); {@link RoomPhases#NONE} on the others
 */
public record KVStatusEvent(long room, @Nullable KVPoll previous, KVPoll current, @Nullable FailureCause cause,
		String reason, long timestampNanos, RoomPhases phases) {

	/** An event without phases: a non-terminal change, or one made outside a manager. */
	public KVStatusEvent(long room, @Nullable KVPoll previous, KVPoll current, @Nullable FailureCause cause,
			String reason, long timestampNanos) {
		this(room, previous, current, cause, reason, timestampNanos, RoomPhases.NONE);
	}

	public KVStatusEvent {
		Objects.requireNonNull(current, "current");
		Objects.requireNonNull(reason, "reason");
		Objects.requireNonNull(phases, "phases");
		if ((current == KVPoll.FAILED) != (cause != null)) {
			throw new IllegalArgumentException("cause : " + cause + " (expected: a cause exactly when FAILED)");
		}
	}
}
