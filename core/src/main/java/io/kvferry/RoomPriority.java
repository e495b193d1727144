package io.kvferry;

/**
 * How a room's bytes queue on a connection it shares with other rooms. Set on the sender, before its
 * {@link KVSender#init init}: {@link KVSender#priority(RoomPriority)}.
 *
 * <p>By default every room keeps at most a small window of its pieces in a connection's queue, so rooms take turns:
 * a one-page room behind a large one waits for that window, not for the whole room. With many large rooms sharing a
 * connection the windows add up, one per room. A {@link #HIGH} room's data, fences and Success go ahead of every
 * {@link #NORMAL} room's queued pieces: it waits only for the piece being written on each stripe (at most 4 MiB).
 * HIGH rooms among themselves keep their order. A transport with a single queue (the in-memory one) may ignore it;
 * the Netty transport honours it on every stripe, over TCP and through a same-host ring alike.
 */
public enum RoomPriority {

	/** Takes turns with the other rooms of the connection (the default). */
	NORMAL,

	/** Goes ahead of the NORMAL rooms' queued pieces: for latency-sensitive requests, such as a short interactive one. */
	HIGH
}
