package io.kvferry.internal.topology;

import io.kvferry.TopologyException;

/**
 * Plans which heads of each token a prefill rank sends to a decode rank when their attention TP sizes differ
 * (non-MLA; SGLang's {@code send_kvcache_slice}). Stateless and thread-safe.
 *
 * <p>With H model KV heads and TP size T, a rank holds {@code max(1, H/T)} heads: when T ≤ H rank r holds heads
 * {@code r·H/T …}; when T &gt; H each head is replicated on T/H consecutive ranks and rank r holds head
 * {@code r / (T/H)}. When prefill TP P is larger than decode TP D, each of a decode rank's P/D prefill ranks sends all
 * its heads to their place in the decode token; when P &lt; D, the prefill rank sends each of its D/P decode ranks
 * the heads that rank holds. The rule for P &lt; D is the corrected one that divides the decode rank by its GQA
 * replication factor {@code max(1, D/H)} (the older {@code (d·dst_heads) mod src_heads} picks wrong heads when
 * D &gt; H).
 *
 * <p>Ranks are the full attention TP ranks of each side. SGLang states the rule with the rank inside the group one
 * rank feeds; both give the same offsets, because the group's first rank always starts at a multiple of the other
 * side's heads per rank.
 *
 * <p>For every layer buffer (K and V alike), source page i, destination page j and token t &lt; S, the sender moves
 * {@link HeadSlice#sliceBytes()} bytes from {@code src + i·srcItemLen + t·(srcItemLen/S) + slice.srcByteOffset()} to
 * {@code dst + j·dstItemLen + t·(dstItemLen/S) + slice.dstByteOffset()}.
 */
public final class HeadSlicing {

	private HeadSlicing() {
	}

	/**
	 * @param totalKvHeads H, the model's KV heads
	 * @param prefillTp P, prefill attention TP size
	 * @param decodeTp D, decode attention TP size
	 * @param prefillTpRank p, the sending prefill rank's attention TP rank
	 * @param decodeTpRank d, the receiving decode rank's attention TP rank (engine rank mod D)
	 * @param srcItemLen prefill bytes per page per layer buffer
	 * @param dstItemLen decode bytes per page per layer buffer
	 * @param pageSize S, tokens per page
	 * @return the slice; when P == D the whole token (offsets 0, every head the rank holds)
	 * @throws TopologyException when the TP sizes do not divide each other or H, p does not feed d, the item lengths do
	 *         not agree with the head counts (for example different dtypes), or the slice does not fit a token
	 * @throws IllegalArgumentException for sizes below 1 or ranks out of range
	 */
	public static HeadSlice plan(int totalKvHeads, int prefillTp, int decodeTp, int prefillTpRank, int decodeTpRank,
			int srcItemLen, int dstItemLen, int pageSize) {
		checkPositive("pageSize", pageSize);
		return plan(totalKvHeads, prefillTp, decodeTp, prefillTpRank, decodeTpRank, srcItemLen, dstItemLen, pageSize,
				pageSize);
	}

	/**
	 * As {@link #plan(int, int, int, int, int, int, int, int)} for prefill pages of {@code srcPageSize} tokens and
	 * decode pages of {@code dstPageSize}: the slice is per token, so only the bytes per token of each side matter.
	 *
	 * @throws TopologyException as the other overload, naming each side's page size
	 */
	public static HeadSlice plan(int totalKvHeads, int prefillTp, int decodeTp, int prefillTpRank, int decodeTpRank,
			int srcItemLen, int dstItemLen, int srcPageSize, int dstPageSize) {
		checkPositive("totalKvHeads", totalKvHeads);
		checkPositive("prefillTp", prefillTp);
		checkPositive("decodeTp", decodeTp);
		checkPositive("srcItemLen", srcItemLen);
		checkPositive("dstItemLen", dstItemLen);
		checkPositive("srcPageSize", srcPageSize);
		checkPositive("dstPageSize", dstPageSize);
		checkRank("prefillTpRank", prefillTpRank, prefillTp);
		checkRank("decodeTpRank", decodeTpRank, decodeTp);
		int h = totalKvHeads;
		int p = prefillTp;
		int d = decodeTp;
		if (Math.max(p, d) % Math.min(p, d) != 0) {
			throw new TopologyException("prefill attn_tp_size=" + p + " and decode attn_tp_size=" + d
					+ " do not divide each other (expected: one a multiple of the other)");
		}
		checkHeadSplit("prefill", p, h);
		checkHeadSplit("decode", d, h);
		boolean feeds = p >= d ? prefillTpRank / (p / d) == decodeTpRank : decodeTpRank / (d / p) == prefillTpRank;
		if (!feeds) {
			throw new TopologyException("prefill tp rank " + prefillTpRank + " (of " + p
					+ ") does not feed decode tp rank " + decodeTpRank + " (of " + d + ")");
		}
		if (srcItemLen % srcPageSize != 0 || dstItemLen % dstPageSize != 0) {
			throw new TopologyException("item lengths prefill=" + srcItemLen + " decode=" + dstItemLen
					+ (srcPageSize == dstPageSize ? " (expected: multiples of page_size=" + srcPageSize + ")"
							: " (expected: multiples of their page sizes " + srcPageSize + " and " + dstPageSize + ")"));
		}
		int srcHeads = Math.max(1, h / p);
		int dstHeads = Math.max(1, h / d);
		int srcTokenBytes = srcItemLen / srcPageSize;
		int dstTokenBytes = dstItemLen / dstPageSize;
		if (dstTokenBytes % dstHeads != 0) {
			throw new TopologyException("decode item length " + dstItemLen + " holds " + dstTokenBytes
					+ " bytes per token (expected: a multiple of its " + dstHeads + " KV heads)");
		}
		int headBytes = dstTokenBytes / dstHeads;
		if ((long) srcHeads * headBytes != srcTokenBytes) {
			throw new TopologyException("item lengths are inconsistent: prefill " + srcItemLen + " bytes per page = "
					+ srcTokenBytes + " per token for " + srcHeads + " heads, decode " + dstItemLen
					+ " bytes per page = " + headBytes + " per head (expected: prefill token bytes = " + srcHeads
					+ " × " + headBytes + ")");
		}

		int srcOffset;
		int dstOffset;
		int numHeads;
		if (p == d) {
			srcOffset = 0;
			dstOffset = 0;
			numHeads = srcHeads;
		}
		else if (p > d) {
			// First model head of prefill rank p, as a position inside decode rank d's heads.
			numHeads = srcHeads;
			srcOffset = 0;
			dstOffset = (prefillTpRank / Math.max(1, p / h)) * srcHeads % dstHeads;
		}
		else {
			// First model head of decode rank d, as a position inside prefill rank p's heads.
			numHeads = dstHeads;
			dstOffset = 0;
			srcOffset = (decodeTpRank / Math.max(1, d / h)) * dstHeads % srcHeads;
		}
		if (srcOffset + numHeads > srcHeads || dstOffset + numHeads > dstHeads) {
			throw new TopologyException("head slice of " + numHeads + " heads at prefill head " + srcOffset
					+ " / decode head " + dstOffset + " does not fit tokens of " + srcHeads + " / " + dstHeads
					+ " heads");
		}
		return new HeadSlice(srcOffset, dstOffset, numHeads, headBytes);
	}

	// H heads over T ranks: T divides H (heads split) or H divides T (each head replicated T/H times).
	private static void checkHeadSplit(String side, int tp, int heads) {
		if (tp <= heads ? heads % tp != 0 : tp % heads != 0) {
			throw new TopologyException(side + " attn_tp_size=" + tp + " and total_kv_heads=" + heads
					+ " do not divide each other (expected: one a multiple of the other)");
		}
	}

	private static void checkPositive(String name, int value) {
		if (value < 1) {
			throw new IllegalArgumentException(name + " : " + value + " (expected: >= 1)");
		}
	}

	private static void checkRank(String name, int rank, int size) {
		if (rank < 0 || rank >= size) {
			throw new IllegalArgumentException(name + " : " + rank + " (expected: 0.." + (size - 1) + ")");
		}
	}
}
