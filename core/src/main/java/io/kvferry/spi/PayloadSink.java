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

	/**
	 * Offers the destination of the payload's next bytes so that a transport can read them from the socket straight
	 * into it, saving the copy from its read buffer. The transport then passes the bytes it read to {@link #write} as
	 * usual, in a buffer over that same memory; the sink sees they are already in place and only counts them.
	 *
	 * <p>Called on the connection's thread, between {@link #write} calls. The default offers nothing.
	 *
	 * @param minBytes fewest contiguous bytes worth a direct read
	 * @param maxBytes most bytes the transport will read into it
	 * @return an empty buffer (reader and writer index 0) over the next destination bytes, at most {@code maxBytes}
	 *         and never past the payload's end, which the caller releases (that frees no memory); or {@code null}
	 *         when the bytes must come through {@link #write} (fewer than {@code minBytes} contiguous destination
	 *         bytes, or the destination refuses bytes)
	 */
	default ByteBuf landingZone(int minBytes, int maxBytes) {
		return null;
	}
}
