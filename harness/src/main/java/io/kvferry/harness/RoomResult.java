package io.kvferry.harness;

import org.jspecify.annotations.Nullable;

/**
 * The outcome of one room run by {@link KVCluster}.
 *
 * @param room the room
 * @param pages pages moved
 * @param bytes KV bytes that landed on decode (every decode rank's share)
 * @param latencyNanos from the first send to the last completion
 * @param failure null when every rank succeeded and every byte matched; else why not
 */
public record RoomResult(long room, int pages, long bytes, long latencyNanos, @Nullable String failure) {

	/** @return whether the room succeeded and every byte matched */
	public boolean ok() {
		return failure == null;
	}
}
