package io.kvferry.internal.topology;

/**
 * A stretch of tokens that is contiguous on both sides, so that it moves as one block per layer buffer. A token's
 * slot is its place in a region counted in tokens: {@code page × pageSize + token in page}, so its byte offset is
 * {@code slot × bytes per token}, each side with its own page size. Immutable.
 *
 * @param srcSlot first source (prefill) slot
 * @param dstSlot first destination (decode) slot
 * @param tokens number of tokens
 */
public record SlotRun(long srcSlot, long dstSlot, int tokens) {

	/**
	 * @throws IllegalArgumentException when a slot is negative or the length below 1
	 */
	public SlotRun {
		if (srcSlot < 0) {
			throw new IllegalArgumentException("srcSlot : " + srcSlot + " (expected: >= 0)");
		}
		if (dstSlot < 0) {
			throw new IllegalArgumentException("dstSlot : " + dstSlot + " (expected: >= 0)");
		}
		if (tokens < 1) {
			throw new IllegalArgumentException("tokens : " + tokens + " (expected: >= 1)");
		}
	}
}
