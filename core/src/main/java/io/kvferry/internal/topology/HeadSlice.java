package io.kvferry.internal.topology;

/**
 * Which KV heads of each token a prefill rank sends to a decode rank when their attention TP sizes differ (non-MLA): {@code numHeads} consecutive heads starting at head {@code srcHeadOffset} of each source token land at
 * head {@code dstHeadOffset} of the destination token. Planned by {@link HeadSlicing#plan}. Immutable.
 *
 * @param srcHeadOffset first head sent, within a source (prefill) token
 * @param dstHeadOffset where the first head lands, within a destination (decode) token
 * @param numHeads heads sent per token
 * @param headBytes bytes of one head of one token in one layer buffer
 */
public record HeadSlice(int srcHeadOffset, int dstHeadOffset, int numHeads, int headBytes) {

	/**
	 * @throws IllegalArgumentException when an offset is negative, a count below 1, or the slice exceeds 2^31−1 bytes
	 */
	public HeadSlice {
		if (srcHeadOffset < 0) {
			throw new IllegalArgumentException("srcHeadOffset : " + srcHeadOffset + " (expected: >= 0)");
		}
		if (dstHeadOffset < 0) {
			throw new IllegalArgumentException("dstHeadOffset : " + dstHeadOffset + " (expected: >= 0)");
		}
		if (numHeads < 1) {
			throw new IllegalArgumentException("numHeads : " + numHeads + " (expected: >= 1)");
		}
		if (headBytes < 1) {
			throw new IllegalArgumentException("headBytes : " + headBytes + " (expected: >= 1)");
		}
		long end = Math.max((long) srcHeadOffset, dstHeadOffset) + numHeads;
		if (end * headBytes > Integer.MAX_VALUE) {
			throw new IllegalArgumentException("head slice : (" + Math.max(srcHeadOffset, dstHeadOffset) + " + "
					+ numHeads + ") heads × " + headBytes + " bytes (expected: within one token of at most "
					+ Integer.MAX_VALUE + " bytes)");
		}
	}

	/** @return bytes of the slice within one token: {@code numHeads × headBytes} */
	public int sliceBytes() {
		return numHeads * headBytes;
	}

	/** @return byte offset of the slice within a source token: {@code srcHeadOffset × headBytes} */
	public int srcByteOffset() {
		return srcHeadOffset * headBytes;
	}

	/** @return byte offset of the slice within a destination token: {@code dstHeadOffset × headBytes} */
	public int dstByteOffset() {
		return dstHeadOffset * headBytes;
	}
}
