package io.kvferry.spi;

/**
 * Where a data frame's payload goes on the receiver: {@code count} chunks of {@code chunkLen} bytes, chunk {@code i}
 * at {@code dstOffset + i × dstStride} in region {@code region} of {@code kind}. A contiguous block is one chunk; a
 * head-sliced block has one chunk per token. The payload is {@code chunkLen × count} bytes.
 *
 * @param room the room the bytes belong to
 * @param kind which region list
 * @param region index in that list
 * @param dstOffset byte offset of the first chunk in the region
 * @param chunkLen bytes per chunk
 * @param dstStride bytes between chunk starts on the receiver (ignored when {@code count == 1})
 * @param count number of chunks
 */
public record DataHeader(long room, RegionKind kind, int region, long dstOffset, int chunkLen, long dstStride,
		int count) {

	/** @return payload bytes, {@code chunkLen × count} */
	public long payloadLength() {
		return (long) chunkLen * count;
	}

	/**
	 * @return bytes from the first chunk's start to the last chunk's end on the receiver
	 * @throws ArithmeticException when that does not fit in a {@code long} (a header no region can hold)
	 */
	public long span() {
		return count == 0 ? 0 : Math.addExact(Math.multiplyExact(count - 1L, dstStride), chunkLen);
	}
}
