package io.kvferry;

import org.jspecify.annotations.Nullable;

/**
 * The trace of one room on one manager, opened by a {@link RoomTracer}: the steps of its transfer as they happen, then
 * its outcome. Every method has an empty default; {@link #NONE} is the trace of an untraced room.
 */
public interface RoomTrace {

	/** The trace of a room nobody traces. */
	RoomTrace NONE = new RoomTrace() {
	};

	/** A step of a room's transfer. */
	enum Event {
		/** Decode: the prefill instance's sizes are known (bootstrap server or registry answered, or cached). */
		BOOTSTRAP_RESOLVED,
		/** Decode: every prefill rank of the room is connected and its handshake done; value: how many ranks. */
		HANDSHAKE_DONE,
		/** Decode: the room's destinations went to its prefill ranks; value: destination pages. */
		REQUEST_SENT,
		/** Prefill: a decode rank's destinations arrived; value: destination pages. */
		REQUEST_RECEIVED,
		/** The first byte of the room was sent (prefill) or landed (decode). */
		FIRST_BYTE,
		/** Prefill: a chunk of pages went to every destination; value: the chunk's pages. */
		CHUNK_SENT,
		/** Decode: a prefill rank reported the room done; value: the bytes it sent. */
		RANK_DONE
	}

	/** @return the context decode sends with the room to prefill ranks, opaque to the library; empty for none */
	default String context() {
		return "";
	}

	/**
	 * Records a step.
	 *
	 * @param event what happened
	 * @param value the event's figure (see {@link Event}), 0 when it has none
	 */
	default void event(Event event, long value) {
	}

	/**
	 * Records a step that happened at a given time. The library calls this form, on its callback scheduler, shortly
	 * after the step; the default ignores the time.
	 *
	 * @param event what happened
	 * @param value the event's figure (see {@link Event}), 0 when it has none
	 * @param epochNanos when it happened, in nanoseconds since the epoch
	 */
	default void event(Event event, long value, long epochNanos) {
		event(event, value);
	}

	/**
	 * Says how the room travelled and where its time went on this manager: called once, just before {@link #end}, on
	 * the callback scheduler; the default ignores it.
	 *
	 * @param path the room's path ({@link RoomPath#UNKNOWN} when it ended before its peers were connected)
	 * @param phases the room's phases on this manager
	 */
	default void travelled(RoomPath path, RoomPhases phases) {
	}

	/**
	 * Ends the trace, once.
	 *
	 * @param outcome {@link KVPoll#SUCCESS} or {@link KVPoll#FAILED}
	 * @param cause why it failed, or null on success
	 * @param reason why it failed; empty on success
	 */
	default void end(KVPoll outcome, @Nullable FailureCause cause, String reason) {
	}

	/**
	 * Ends the trace, once, at a given time. The library calls this form, on its callback scheduler; the default ignores
	 * the time.
	 *
	 * @param outcome {@link KVPoll#SUCCESS} or {@link KVPoll#FAILED}
	 * @param cause why it failed, or null on success
	 * @param reason why it failed; empty on success
	 * @param epochNanos when the room ended, in nanoseconds since the epoch
	 */
	default void end(KVPoll outcome, @Nullable FailureCause cause, String reason, long epochNanos) {
		end(outcome, cause, reason);
	}
}
