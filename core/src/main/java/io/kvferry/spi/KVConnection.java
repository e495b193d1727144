package io.kvferry.spi;

import io.kvferry.HostPort;
import reactor.core.publisher.Mono;

/**
 * One connection between a decode rank and a prefill rank. Messages and data blocks are written in the order they are
 * handed over, whatever thread hands them over. Methods never block.
 */
public interface KVConnection {

	/** @return a short id for log lines */
	String id();

	/** @return the peer's address */
	HostPort remoteAddress();

	/**
	 * Queues a control message. Queued at once, whether or not the result is subscribed. A message with a
	 * {@link KVMessage#gatingRoom()} is dropped, like data blocks, when its room is no longer sendable at write time.
	 *
	 * @return completes when the message was written to the network, errors if the connection closed first or the
	 *         message was dropped
	 */
	Mono<Void> send(KVMessage message);

	/**
	 * Queues a data block. Before writing it the transport asks {@link ConnectionHandler#isSendable(long)} and drops it
	 * when false. The source memory must stay valid until the room ends.
	 */
	void sendData(DataBlock block);

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
