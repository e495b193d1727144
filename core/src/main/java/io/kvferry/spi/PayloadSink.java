package io.kvferry.spi;

import io.netty.buffer.ByteBuf;

/**
 * Receives a data frame's payload as it arrives, in order, possibly in many segments. Returned by
 * {@link ConnectionHandler#onData}; called on the connection's thread.
 */
public interface PayloadSink {

	/**
	 * Writes the next payload segment. The sink reads {@code segment}'s readable bytes without changing its indices
	 * and does not release it: the caller keeps ownership.
	 *
	 * @param segment the next bytes of the payload
	 */
	void write(ByteBuf segment);

	/** All {@link DataHeader#payloadLength()} bytes were written. */
	void complete();
}
