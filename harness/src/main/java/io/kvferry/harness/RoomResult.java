package io.kvferry.harness;

import java.util.Objects;

import io.kvferry.RoomPhases;
import org.jspecify.annotations.Nullable;

/**
 * The outcome of one room run by {@link KVCluster}.
 *
 * @param room the room
 * @param pages pages moved
 * @param bytes KV bytes that landed on decode (every decode rank's share)
 * @param latencyNanos from the first send to the last completion
 * @param failure null when every rank succeeded and every byte matched; else why not
 * @param phases where the room's time went on the side that ran it, or {@link RoomPhases#NONE} when not kept
 */
public record RoomResult(long room, int pages, long bytes, long latencyNanos, @Nullable String failure,
		RoomPhases phases) {

	/** @throws NullPointerException when {@code phases} is null: a result without them says {@code NONE} */
	public RoomResult {
		Objects.requireNonNull(phases, "phases");
	}

	/** A result without phases ({@link RoomPhases#NONE}), as every runner that keeps no times gives. */
	public RoomResult(long room, int pages, long bytes, long latencyNanos, @Nullable String failure) {
		this(room, pages, bytes, latencyNanos, failure, RoomPhases.NONE);
	}

	/** @return whether the room succeeded and every byte matched */
	public boolean ok() {
		return failure == null;
	}
}
