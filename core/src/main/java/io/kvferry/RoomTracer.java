package io.kvferry;

/**
 * Opens a trace of each room a manager handles: the hook a tracing integration (such as {@code kvferry-tracing-otel})
 * plugs into {@link KVManagerSpec#tracer(RoomTracer)}. The default, {@link #NONE}, returns {@link RoomTrace#NONE} for
 * every room, so that a manager without tracing allocates nothing and calls only empty methods.
 *
 * <p>Decode opens a room's trace when the receiver is made, and the transfer request carries its
 * {@link RoomTrace#context()} to every prefill rank of the room; prefill opens its trace when the first transfer
 * request arrives, as a child of that context, backdated to when the room opened there (its sender may come first).
 *
 * <p>Implementations are called on the spec's callback scheduler, never on a transport thread or under a library lock,
 * one room's calls in order: the engine records each step with its time where it happens and hands it on. Decode's
 * {@link #start} is the exception: it runs on the thread that makes the receiver (the room's context must be known at
 * once to go out with the room), outside any library lock, and so does the trace's {@link RoomTrace#context()}, read
 * once right after it.
 */
@FunctionalInterface
public interface RoomTracer {

	/** No tracing: every room gets {@link RoomTrace#NONE}. */
	RoomTracer NONE = (side, manager, room, parentContext, startEpochNanos) -> RoomTrace.NONE;

	/**
	 * @param side the manager's role
	 * @param manager the manager's name, as in its log lines
	 * @param room the room
	 * @param parentContext the trace context decode sent with the room (prefill), or empty (decode, or a prefill room
	 *        no decode rank asked for)
	 * @param startEpochNanos when the room opened on this manager, in nanoseconds since the epoch
	 * @return the room's trace, ended by the library exactly once
	 */
	RoomTrace start(DisaggregationMode side, String manager, long room, String parentContext, long startEpochNanos);
}
