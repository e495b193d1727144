package io.kvferry;

/**
 * Where a rank sits in its instance: attention TP, attention DP, system DP, PP and attention CP sizes and ranks, as
 * SGLang registers them. System DP size is 1 when DP attention is on (the DP group is then the attention DP rank).
 * On prefill, CP is attention context parallelism; on decode, it is decode context parallelism (DCP): an MLA decode
 * spreads each room's tokens token by token over its CP ranks, and a decode without MLA must have CP size 1.
 *
 * @param attnTpSize attention tensor-parallel size
 * @param attnTpRank this rank's attention TP rank
 * @param attnDpSize attention data-parallel size
 * @param attnDpRank this rank's attention DP rank
 * @param systemDpSize system data-parallel size (1 with DP attention)
 * @param systemDpRank this rank's system DP rank
 * @param ppSize pipeline-parallel size
 * @param ppRank this rank's pipeline stage
 * @param attnCpSize attention context-parallel size (on decode: DCP size, MLA only; 1 without CP)
 * @param attnCpRank this rank's attention CP rank
 */
public record ParallelLayout(int attnTpSize, int attnTpRank, int attnDpSize, int attnDpRank, int systemDpSize,
		int systemDpRank, int ppSize, int ppRank, int attnCpSize, int attnCpRank) {

	/** One rank: every size 1, every rank 0. */
	public static final ParallelLayout SINGLE = new ParallelLayout(1, 0, 1, 0, 1, 0, 1, 0);

	public ParallelLayout {
		checkRank("attnTp", attnTpSize, attnTpRank);
		checkRank("attnDp", attnDpSize, attnDpRank);
		checkRank("systemDp", systemDpSize, systemDpRank);
		checkRank("pp", ppSize, ppRank);
		checkRank("attnCp", attnCpSize, attnCpRank);
	}

	/** A layout without context parallelism (CP size 1, rank 0). */
	public ParallelLayout(int attnTpSize, int attnTpRank, int attnDpSize, int attnDpRank, int systemDpSize,
			int systemDpRank, int ppSize, int ppRank) {
		this(attnTpSize, attnTpRank, attnDpSize, attnDpRank, systemDpSize, systemDpRank, ppSize, ppRank, 1, 0);
	}

	/**
	 * @param tpSize attention TP size
	 * @param tpRank attention TP rank
	 * @return a layout with only attention TP (no DP, no PP)
	 */
	public static ParallelLayout tp(int tpSize, int tpRank) {
		return new ParallelLayout(tpSize, tpRank, 1, 0, 1, 0, 1, 0);
	}

	/** @return the instance's DP size as the bootstrap server counts it */
	public int dpSize() {
		return systemDpSize == 1 ? attnDpSize : systemDpSize;
	}

	/** @return the DP group this rank registers under */
	public int dpGroup() {
		return systemDpSize == 1 ? attnDpRank : systemDpRank;
	}

	/** @return a copy with another attention TP rank */
	public ParallelLayout withAttnTpRank(int rank) {
		return new ParallelLayout(attnTpSize, rank, attnDpSize, attnDpRank, systemDpSize, systemDpRank, ppSize, ppRank,
				attnCpSize, attnCpRank);
	}

	/** @return a copy with another PP rank */
	public ParallelLayout withPpRank(int rank) {
		return new ParallelLayout(attnTpSize, attnTpRank, attnDpSize, attnDpRank, systemDpSize, systemDpRank, ppSize, rank,
				attnCpSize, attnCpRank);
	}

	/**
	 * @param size attention CP size (on decode: DCP size, MLA only)
	 * @param rank this rank's attention CP rank
	 * @return a copy with that context parallelism
	 */
	public ParallelLayout withAttnCp(int size, int rank) {
		return new ParallelLayout(attnTpSize, attnTpRank, attnDpSize, attnDpRank, systemDpSize, systemDpRank, ppSize,
				ppRank, size, rank);
	}

	/** @return a copy with another DP rank (attention DP rank with DP attention, else system DP rank) */
	public ParallelLayout withDpRank(int rank) {
		return systemDpSize == 1
				? new ParallelLayout(attnTpSize, attnTpRank, attnDpSize, rank, systemDpSize, systemDpRank, ppSize, ppRank,
						attnCpSize, attnCpRank)
				: new ParallelLayout(attnTpSize, attnTpRank, attnDpSize, attnDpRank, systemDpSize, rank, ppSize, ppRank,
						attnCpSize, attnCpRank);
	}

	private static void checkRank(String name, int size, int rank) {
		if (size < 1) {
			throw new IllegalArgumentException(name + "Size : " + size + " (expected: >= 1)");
		}
		if (rank < 0 || rank >= size) {
			throw new IllegalArgumentException(name + "Rank : " + rank + " (expected: 0.." + (size - 1) + ")");
		}
	}
}
