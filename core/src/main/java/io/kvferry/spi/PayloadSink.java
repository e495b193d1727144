package io.kvferry.spi;

import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;

/**
 * Receives a data frame's payload as it arrives, in order, possibly in many segments. Returned by
 * {@link ConnectionHandler#onData}; called on the connection's thread.
 */
public interface PayloadSink {

	/**
	 * Writes the next payload segment. The sink reads {@code segment}'s readable bytes without changing its indices,
	 * and neither releases it nor keeps it past the call: the caller keeps ownership, and may hand over a buffer it
	 * narrowed to the segment only for the call.
	 *
	 * @param segment the next bytes of the payload
	 */
	void write(ByteBuf segment);

	/** All {@link DataHeader#payloadLength()} bytes were written. */
	void complete();

	/**
	 * Offers the destination of the payload's next bytes so that a transport can read them from the socket straight
	 * into it, saving the copy from its read buffer. The transport then reports how many bytes it read there with
	 * {@link #landed}, instead of passing them to {@link #write}.
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
	default @Nullable ByteBuf landingZone(int minBytes, int maxBytes) {
		return null;
	}

	/**
	 * The transport read {@code n} bytes of the payload straight into the landing zone this sink offered last: they
	 * are the payload's next {@code n} bytes, already in place. A zone may take several reads, one after another from
	 * its start, each reported here, until the transport writes a segment or asks for another zone.
	 *
	 * @param n at least 1, at most what the reads before left of the zone
	 * @throws IllegalStateException when no zone is outstanding or {@code n} exceeds it
	 */
	default void landed(int n) {
		throw new IllegalStateException("landed(" + n + ") : no landing zone was offered");
	}
}
