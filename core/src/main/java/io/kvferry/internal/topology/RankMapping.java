package io.kvferry.internal.topology;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.PrefillParallelInfo;

/**
 * The decode side's plan for one prefill instance: which prefill ranks a decode rank talks to for each
 * room, how many decode ranks each prefill rank waits for, and how many distinct prefill ranks must report Success.
 * Computed once per prefill instance; immutable and thread-safe.
 *
 * <pre>{@code
 * RankMapping mapping = RankMapping.plan(info, decodeLayout, engineRank, pageSize, mla);
 * for (RankTarget t : mapping.targets()) {
 *     // GET /route for (dp group, t.tpRank(), t.ppRank()), connect, send the room's request (empty when t.dummy())
 * }
 * }</pre>
 *
 * @param targets the prefill ranks to contact: for each TP rank in ascending order, its PP stages in descending order
 *        (SGLang bootstraps later stages first)
 * @param requiredDstInfoNum how many decode ranks each target prefill rank waits for before sending
 *        ({@code required_dst_info_num})
 * @param requiredPrefillResponseNum how many distinct prefill ranks must report Success before the room succeeds
 *        ({@code required_prefill_response_num})
 */
public record RankMapping(List<RankTarget> targets, int requiredDstInfoNum, int requiredPrefillResponseNum) {

	/**
	 * @throws IllegalArgumentException when there is no target or a count is below 1
	 */
	public RankMapping {
		Objects.requireNonNull(targets, "targets");
		targets = List.copyOf(targets);
		if (targets.isEmpty()) {
			throw new IllegalArgumentException("targets : empty (expected: at least one prefill rank)");
		}
		if (requiredDstInfoNum < 1) {
			throw new IllegalArgumentException("requiredDstInfoNum : " + requiredDstInfoNum + " (expected: >= 1)");
		}
		if (requiredPrefillResponseNum < 1) {
			throw new IllegalArgumentException("requiredPrefillResponseNum : " + requiredPrefillResponseNum
					+ " (expected: >= 1)");
		}
	}

	/**
	 * Plans the prefill ranks one decode rank talks to, as SGLang's {@code CommonKVReceiver} does. With P the prefill
	 * attention TP size, D the decode's and e the decode engine rank: P == D targets TP rank {@code e mod D}; D > P
	 * targets {@code (e mod D) / (D/P)} and that rank waits for D/P decode ranks; P > D targets the P/D ranks from
	 * {@code (e mod D)·(P/D)}, of which MLA uses only the first (the others are dummies) while non-MLA needs a
	 * response from each. Decode PP equal to prefill PP targets the decode's own stage; decode PP 1 targets every
	 * prefill stage and needs a response from each.
	 *
	 * @param prefill prefill sizes from the bootstrap server
	 * @param decode the decode rank's layout ({@code attnTpSize}, {@code ppSize}, {@code ppRank} and its CP as decode
	 *        context parallelism: above 1 only with MLA, see {@link DcpRelayout})
	 * @param decodeEngineRank decode engine rank e, used modulo the decode attention TP size
	 * @param decodePageSize the decode's page size; equal to {@code prefill.pageSize()}, or both powers of two (decode
	 *        re-pages what it receives)
	 * @param mla whether the KV cache is MLA (latent KV replicated on every TP rank)
	 * @return the plan
	 * @throws TopologyException for TP sizes that do not divide each other, PP sizes other than equal or decode 1,
	 *         different page sizes that are not both powers of two, or decode CP above 1 without MLA; the message
	 *         names both values
	 * @throws IllegalArgumentException for a negative engine rank or a page size below 1
	 */
	public static RankMapping plan(PrefillParallelInfo prefill, ParallelLayout decode, int decodeEngineRank,
			int decodePageSize, boolean mla) {
		Objects.requireNonNull(prefill, "prefill");
		Objects.requireNonNull(decode, "decode");
		// Decode's CP is SGLang's decode context parallelism: kvferry's prefill has no DCP, so this is 1 -> n.
		DcpRelayout.requiresRelayout(1, 0, decode.attnCpSize(), decode.attnCpRank(), mla);
		if (decodeEngineRank < 0) {
			throw new IllegalArgumentException("decodeEngineRank : " + decodeEngineRank + " (expected: >= 0)");
		}
		if (decodePageSize < 1) {
			throw new IllegalArgumentException("decodePageSize : " + decodePageSize + " (expected: >= 1)");
		}
		Repaging.checkPageSizes(prefill.pageSize(), decodePageSize);
		int p = prefill.attnTpSize();
		int d = decode.attnTpSize();
		if (Math.max(p, d) % Math.min(p, d) != 0) {
			throw new TopologyException("prefill attn_tp_size=" + p + " and decode attn_tp_size=" + d
					+ " do not divide each other (expected: one a multiple of the other)");
		}
		int[] ppRanks = targetPpRanks(prefill.ppSize(), decode.ppSize(), decode.ppRank());
		int decodeTpRank = decodeEngineRank % d;

		int firstTp;
		int tpCount;
		int dstInfo;
		int tpResponses;
		if (p == d) {
			firstTp = decodeTpRank;
			tpCount = 1;
			dstInfo = 1;
			tpResponses = 1;
		}
		else if (d > p) {
			firstTp = decodeTpRank / (d / p);
			tpCount = 1;
			dstInfo = d / p;
			tpResponses = 1;
		}
		else {
			tpCount = p / d;
			firstTp = decodeTpRank * tpCount;
			dstInfo = 1;
			// MLA latent KV is the same on every prefill TP rank: one real source, the rest only join the consensus.
			tpResponses = mla ? 1 : tpCount;
		}

		List<RankTarget> targets = new ArrayList<>(tpCount * ppRanks.length);
		for (int tp = firstTp; tp < firstTp + tpCount; tp++) {
			boolean dummy = mla && tp != firstTp;
			for (int i = ppRanks.length - 1; i >= 0; i--) {
				targets.add(new RankTarget(tp, ppRanks[i], dummy));
			}
		}
		return new RankMapping(targets, dstInfo, tpResponses * ppRanks.length);
	}

	/**
	 * SGLang's prefill DP rank for a room: the hint when the request names one, else {@code room mod dpSize}. The
	 * modulo is a floor modulo, as Python's {@code %}, so a negative 64-bit room still maps to a valid rank.
	 *
	 * @param room the room
	 * @param hint the prefill DP rank the request asked for, or {@code null}
	 * @param prefillDpSize the prefill instance's DP size
	 * @return the prefill DP rank (the bootstrap server's {@code target_dp_group})
	 * @throws TopologyException when the hint is outside {@code 0..prefillDpSize-1}
	 * @throws IllegalArgumentException when {@code prefillDpSize < 1}
	 */
	public static int prefillDpRank(long room, Integer hint, int prefillDpSize) {
		if (prefillDpSize < 1) {
			throw new IllegalArgumentException("prefillDpSize : " + prefillDpSize + " (expected: >= 1)");
		}
		if (hint != null) {
			if (hint < 0 || hint >= prefillDpSize) {
				throw new TopologyException("prefill dp rank " + hint + " for room " + room
						+ " is outside prefill dp_size=" + prefillDpSize + " (expected: 0.." + (prefillDpSize - 1)
						+ ")");
			}
			return hint;
		}
		return (int) Math.floorMod(room, (long) prefillDpSize);
	}

	/**
	 * SGLang's {@code prefill_unique_rank} without context parallelism: the key under which decode counts distinct
	 * prefill status reports.
	 *
	 * @param tpRank prefill attention TP rank
	 * @param ppSize prefill PP size
	 * @param ppRank prefill PP rank
	 * @return {@code tpRank * ppSize + ppRank}
	 * @throws IllegalArgumentException when a rank is out of range
	 * @throws ArithmeticException when the result does not fit an {@code int}
	 */
	public static int prefillUniqueRank(int tpRank, int ppSize, int ppRank) {
		if (tpRank < 0) {
			throw new IllegalArgumentException("tpRank : " + tpRank + " (expected: >= 0)");
		}
		if (ppSize < 1) {
			throw new IllegalArgumentException("ppSize : " + ppSize + " (expected: >= 1)");
		}
		if (ppRank < 0 || ppRank >= ppSize) {
			throw new IllegalArgumentException("ppRank : " + ppRank + " (expected: 0.." + (ppSize - 1) + ")");
		}
		return Math.addExact(Math.multiplyExact(tpRank, ppSize), ppRank);
	}

	/**
	 * SGLang's {@code prefill_unique_rank} with context parallelism: {@code tp × (pp size × cp size) + pp × cp size +
	 * cp}.
	 *
	 * @return the unique rank
	 * @throws IllegalArgumentException when a rank is out of range
	 * @throws ArithmeticException when the result does not fit an {@code int}
	 */
	public static int prefillUniqueRank(int tpRank, int ppSize, int ppRank, int cpSize, int cpRank) {
		if (cpSize < 1 || cpRank < 0 || cpRank >= cpSize) {
			throw new IllegalArgumentException("cpRank : " + cpRank + " (expected: 0.." + (cpSize - 1) + ")");
		}
		return Math.addExact(Math.multiplyExact(prefillUniqueRank(tpRank, ppSize, ppRank), cpSize), cpRank);
	}

	/**
	 * The plan when decode pulls from every prefill CP rank (all-CP-ranks transfer, or DSA layer split): each target
	 * is asked on every CP rank (CP rank 0 first, in this plan's order), and a room needs a response from each real
	 * one.
	 *
	 * @param cpSize the prefill instance's attention CP size
	 * @return the plan over every CP rank; this plan when {@code cpSize} is 1
	 * @throws IllegalArgumentException when {@code cpSize < 1}
	 */
	public RankMapping spreadOverCp(int cpSize) {
		if (cpSize < 1) {
			throw new IllegalArgumentException("cpSize : " + cpSize + " (expected: >= 1)");
		}
		if (cpSize == 1) {
			return this;
		}
		List<RankTarget> all = new ArrayList<>(targets.size() * cpSize);
		for (int cp = 0; cp < cpSize; cp++) {
			for (RankTarget t : targets) {
				all.add(new RankTarget(t.tpRank(), t.ppRank(), t.dummy(), cp));
			}
		}
		return new RankMapping(all, requiredDstInfoNum, Math.multiplyExact(requiredPrefillResponseNum, cpSize));
	}

	/** @return the targets that transfer and report, in {@link #targets()} order (all but the dummies) */
	public List<RankTarget> realTargets() {
		return targets.stream().filter(t -> !t.dummy()).toList();
	}

	private static int[] targetPpRanks(int prefillPp, int decodePp, int decodePpRank) {
		if (decodePp == prefillPp) {
			return new int[] { decodePpRank };
		}
		if (decodePp == 1) {
			int[] all = new int[prefillPp];
			for (int i = 0; i < prefillPp; i++) {
				all[i] = i;
			}
			return all;
		}
		throw new TopologyException("decode pp_size=" + decodePp + " does not fit prefill pp_size=" + prefillPp
				+ " (expected: decode pp_size equal to prefill's, or 1)");
	}
}
