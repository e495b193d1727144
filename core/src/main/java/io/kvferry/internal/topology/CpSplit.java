package io.kvferry.internal.topology;

/**
 * How prefill context-parallel ranks share a room's work, as SGLang splits it: {@code total} items (a room's pages
 * with all-CP-ranks transfer, a rank's layers with DSA layer split) into {@code cpSize} contiguous ranges, the first
 * {@code total mod cpSize} ranks one item more. Stateless.
 */
public final class CpSplit {

	private CpSplit() {
	}

	/**
	 * @param total items to share, at least 0
	 * @param cpSize CP size, at least 1
	 * @param cpRank the CP rank, 0..cpSize-1
	 * @return {@code {start, end}}: the rank's items {@code [start, end)}
	 * @throws IllegalArgumentException for a negative total, a size below 1 or a rank out of range
	 */
	public static int[] range(int total, int cpSize, int cpRank) {
		if (total < 0 || cpSize < 1 || cpRank < 0 || cpRank >= cpSize) {
			throw new IllegalArgumentException("cp split : total=" + total + " cpSize=" + cpSize + " cpRank=" + cpRank
					+ " (expected: total >= 0, cpSize >= 1, cpRank 0..cpSize-1)");
		}
		int base = total / cpSize;
		int extra = total % cpSize;
		int start = cpRank * base + Math.min(cpRank, extra);
		return new int[] { start, start + base + (cpRank < extra ? 1 : 0) };
	}
}
