package io.kvferry.spi;

import io.kvferry.HostPort;
import io.kvferry.RoomPath;
import reactor.core.publisher.Mono;

/**
 * One connection between a decode rank and a prefill rank. Messages and data blocks are written in the order they are
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

	/**
	 * Queues a data block. Before writing each of its frames the transport asks the block's gate and drops the rest
	 * of the block when it closed. The source memory must stay valid until the room ends.
	 */
	void sendData(DataBlock block);

	/**
	 * Queues many small pieces of one room, in order after everything queued before. A transport that carries
	 * scatter frames sends them as few frames, gathered from the source memory in place; by default each piece goes
	 * as its own {@link #sendData data block}, which the receiver places and checks the same way.
	 */
	default void sendScatter(ScatterBlock block) {
		for (int i = 0; i < block.header().count(); i++) {
			sendData(block.piece(i));
		}
	}

	/**
	 * How this connection moves KV bytes, so that a room can say how it travelled and a rank can insist on a path.
	 * Known once the handshake completed (a same-host ring is settled by then); one connection is one stripe.
	 *
	 * @return the connection's path; {@link RoomPath#UNKNOWN} by default, for transports that do not say
	 */
	default RoomPath path() {
		return RoomPath.UNKNOWN;
	}

	/**
	 * Queues a data block, and says when the transport is done with it: {@code listener} hears {@link
	 * SendListener#written()} once the block's last frame left the transport's queue (every frame of it was handed to
	 * the network), or {@link SendListener#failed} when the block was dropped (its gate closed, the connection closed).
	 * A sender uses it to keep only a little of each room queued at a time, so that the rooms sharing a connection
	 * take turns instead of a small room waiting behind a large one.
	 *
	 * <p>The default queues the block and answers {@code written} at once: a transport without a queue of its own
	 * (or one that does not tell) just gets every block at once, as from {@link #sendData(DataBlock)}.
	 */
	default void sendData(DataBlock block, SendListener listener) {
		sendData(block);
		listener.written();
	}

	/**
	 * Queues many small pieces of one room, as {@link #sendScatter(ScatterBlock)}, and tells {@code listener} once the
	 * last of them was written (or that they were dropped), as {@link #sendData(DataBlock, SendListener)} does.
	 */
	default void sendScatter(ScatterBlock block, SendListener listener) {
		sendScatter(block);
		listener.written();
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
