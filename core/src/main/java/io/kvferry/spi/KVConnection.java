package io.kvferry.spi;

import io.kvferry.HostPort;
import io.kvferry.RoomPath;
import reactor.core.publisher.Mono;

/**
 * One connection between a decode rank and a prefill rank. Messages and blocks are written in the order they are
 * handed over, whatever thread hands them over. No method blocks; sending is fire-and-forget, and what is lost shows
 * through the connection's close (or through a {@link SendListener} where a result matters).
 */
public interface KVConnection {

	/** @return a short id for log lines */
	String id();

	/** @return the peer's address */
	HostPort remoteAddress();

	/** Queues a control message, always written unless the connection closes first. */
	default void send(KVMessage message) {
		send(message, SendGate.OPEN, SendListener.NONE);
	}

	/**
	 * Queues a control message.
	 *
	 * @param message the message
	 * @param gate asked just before writing: a closed gate drops the message (a Success whose room stopped meanwhile);
	 *        a connection that is closing drops every message not sent with {@link SendGate#OPEN}, as it drops
	 *        queued data blocks
	 * @param listener told whether the message was written
	 */
	void send(KVMessage message, SendGate gate, SendListener listener);

	/**
	 * Lazily queues a message: nothing is sent before subscription.
	 *
	 * @return completes when the message was written, errors when it was not
	 */
	default Mono<Void> write(KVMessage message) {
		return Mono.create(sink -> send(message, SendGate.OPEN, SendListener.of(sink)));
	}

	/** Queues a block of a room's bytes, as {@link #send(Block, SendListener)} with no one to tell. */
	default void send(Block block) {
		send(block, SendListener.NONE);
	}

	/**
	 * Queues a block of a room's bytes, in order after everything queued before. Before writing each of its frames the
	 * transport asks the block's gate and drops the rest of the block when it closed. The source memory must stay
	 * valid until the room ends. A {@link ScatterBlock}'s pieces go as few frames, gathered from the source memory in
	 * place, on a transport that carries scatter frames; one that does not sends each as its own {@link DataBlock}
	 * ({@link ScatterBlock#piece}), which the receiver places and checks the same way.
	 *
	 * <p>{@code listener} hears {@link SendListener#written()} once the block's last frame left the transport's queue
	 * (every frame of it was handed to the network), or {@link SendListener#failed} when the block was dropped (its
	 * gate closed, the connection closed). A sender uses it to keep only a little of each room queued at a time, so
	 * that the rooms sharing a connection take turns instead of a small room waiting behind a large one. A transport
	 * without a queue of its own answers {@code written} once it took the block.
	 *
	 * @throws IllegalArgumentException when the block's header does not describe its payload
	 */
	void send(Block block, SendListener listener);

	/**
	 * How this connection moves KV bytes, so that a room can say how it travelled and a rank can insist on a path.
	 * Known once the handshake completed (a same-host ring is settled by then); one connection is one stripe.
	 *
	 * @return the connection's path; {@link RoomPath#UNKNOWN} by default, for transports that do not say
	 */
	default RoomPath path() {
		return RoomPath.UNKNOWN;
	}

	/** @return whether the connection is open */
	boolean isActive();

	/** Closes the connection; {@link ConnectionHandler#onClose} follows with {@code reason}. */
	void close(String reason);

	/**
	 * @return completes once the connection is closed (by either side) and the transport no longer reads or writes
	 *         registered memory for it: no queued block is read any more, no payload lands any more
	 */
	Mono<Void> onClose();
}
