package io.kvferry.internal.topology;

/**
 * One prefill rank a decode rank must talk to for a room, as planned by {@link RankMapping#plan}. Immutable.
 *
 * @param tpRank the prefill rank's attention TP rank
 * @param ppRank the prefill rank's pipeline stage
 * @param dummy whether the rank only takes part in the status consensus (MLA with a larger prefill TP): it is sent
 *        the room's metadata with no pages, transfers nothing and reports nothing
 * @param cpRank the prefill rank's attention CP rank (0 unless decode pulls from every CP rank)
 */
public record RankTarget(int tpRank, int ppRank, boolean dummy, int cpRank) {

	/** A target at CP rank 0. */
	public RankTarget(int tpRank, int ppRank, boolean dummy) {
		this(tpRank, ppRank, dummy, 0);
	}

	/**
	 * @throws IllegalArgumentException when a rank is negative
	 */
	public RankTarget {
		if (tpRank < 0) {
			throw new IllegalArgumentException("tpRank : " + tpRank + " (expected: >= 0)");
		}
		if (ppRank < 0) {
			throw new IllegalArgumentException("ppRank : " + ppRank + " (expected: >= 0)");
		}
		if (cpRank < 0) {
			throw new IllegalArgumentException("cpRank : " + cpRank + " (expected: >= 0)");
		}
	}

	/**
	 * @param prefillPpSize the prefill instance's PP size
	 * @return the prefill rank's {@code prefill_unique_rank}, the key its status reports are counted under
	 */
	public int uniqueRank(int prefillPpSize) {
		return RankMapping.prefillUniqueRank(tpRank, prefillPpSize, ppRank);
	}

	/**
	 * @param prefillPpSize the prefill instance's PP size
	 * @param prefillCpSize the prefill instance's attention CP size
	 * @return the prefill rank's {@code prefill_unique_rank} with context parallelism
	 */
	public int uniqueRank(int prefillPpSize, int prefillCpSize) {
		return RankMapping.prefillUniqueRank(tpRank, prefillPpSize, ppRank, prefillCpSize, cpRank);
	}
}
