package io.kvferry.internal.topology;

/**
 * A maximal run of pages where the source and the destination page indices both advance by one: it moves
 * as one block per layer buffer. Byte offsets are computed in 64 bits. Immutable.
 *
 * @param srcStart first source (prefill) page index
 * @param dstStart first destination (decode) page index
 * @param length number of pages
 */
public record PageRun(int srcStart, int dstStart, int length) {

	/**
	 * @throws IllegalArgumentException when a start is negative or the length below 1
	 */
	public PageRun {
		if (srcStart < 0) {
			throw new IllegalArgumentException("srcStart : " + srcStart + " (expected: >= 0)");
		}
		if (dstStart < 0) {
			throw new IllegalArgumentException("dstStart : " + dstStart + " (expected: >= 0)");
		}
		if (length < 1) {
			throw new IllegalArgumentException("length : " + length + " (expected: >= 1)");
		}
	}

	/**
	 * @param itemLen the source region's bytes per page
	 * @return the run's byte offset in the source region, {@code srcStart × itemLen}
	 */
	public long srcOffset(int itemLen) {
		return (long) srcStart * checkItemLen(itemLen);
	}

	/**
	 * @param itemLen the destination region's bytes per page
	 * @return the run's byte offset in the destination region, {@code dstStart × itemLen}
	 */
	public long dstOffset(int itemLen) {
		return (long) dstStart * checkItemLen(itemLen);
	}

	/**
	 * @param itemLen bytes per page
	 * @return the run's length in bytes, {@code length × itemLen}
	 */
	public long byteLength(int itemLen) {
		return (long) length * checkItemLen(itemLen);
	}

	private static int checkItemLen(int itemLen) {
		if (itemLen < 1) {
			throw new IllegalArgumentException("itemLen : " + itemLen + " (expected: >= 1)");
		}
		return itemLen;
	}
}
