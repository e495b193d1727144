package io.kvferry.bootstrap;

import io.kvferry.ParallelLayout;
import org.jspecify.annotations.Nullable;

/**
 * A prefill instance's sizes and the rule every registry keeps them by: <b>the first registration fixes them</b>. A
 * later registration that declares other sizes is taken all the same when its rank fits the fixed sizes
 * ({@link #misfit}), as SGLang's server takes it; the instance is complete once every one of its
 * dp × cp × tp × pp ranks registered ({@link #isComplete}).
 *
 * @param attnTpSize attention TP size
 * @param attnCpSize attention CP size (1 without context parallelism)
 * @param dpSize DP size as the bootstrap server counts it ({@link ParallelLayout#dpSize()})
 * @param ppSize PP size
 * @param pageSize KV page size in tokens
 */
public record PrefillSizes(int attnTpSize, int attnCpSize, int dpSize, int ppSize, int pageSize) {

	/**
	 * @param registration a prefill rank's registration
	 * @return the sizes it declares
	 */
	public static PrefillSizes declaredBy(PrefillRegistration registration) {
		ParallelLayout layout = registration.layout();
		return new PrefillSizes(layout.attnTpSize(), layout.attnCpSize(), layout.dpSize(), layout.ppSize(),
				registration.pageSize());
	}

	/**
	 * The rule: the sizes an instance has once a registration declared {@code declared}.
	 *
	 * @param fixed the instance's sizes so far, {@code null} before its first registration
	 * @param declared what the registration declares
	 * @return {@code fixed}, or {@code declared} when this is the first registration
	 */
	public static PrefillSizes fix(@Nullable PrefillSizes fixed, PrefillSizes declared) {
		return fixed != null ? fixed : declared;
	}

	/**
	 * @return dp × cp × tp × pp: how many distinct ranks make the instance complete; saturates at
	 *         {@code Long.MAX_VALUE}, as a product of four sizes of up to 2^16 each could overflow
	 */
	public long totalRanks() {
		long total = 1;
		for (int size : new int[] { dpSize, attnCpSize, attnTpSize, ppSize }) {
			if (total > Long.MAX_VALUE / size) {
				return Long.MAX_VALUE;
			}
			total *= size;
		}
		return total;
	}

	/**
	 * @param registered how many distinct ranks of the instance registered
	 * @return whether every rank did
	 */
	public boolean isComplete(long registered) {
		return registered >= totalRanks();
	}

	/**
	 * Whether a rank fits these sizes, checked by DP group, CP, TP and PP rank in that order.
	 *
	 * @param dpGroupField the registration field the DP group came from ({@link #dpGroupField(ParallelLayout)})
	 * @param dpGroup the rank's DP group
	 * @param cpRank its attention CP rank
	 * @param tpRank its attention TP rank
	 * @param ppRank its PP rank
	 * @return {@code null} when it fits, else why not, naming the field
	 */
	public @Nullable String misfit(String dpGroupField, int dpGroup, int cpRank, int tpRank, int ppRank) {
		String why = misfit(dpGroupField, dpGroup, dpSize, "dp size");
		if (why == null) {
			why = misfit(BootstrapFields.ATTN_CP_RANK, cpRank, attnCpSize, BootstrapFields.ATTN_CP_SIZE);
		}
		if (why == null) {
			why = misfit(BootstrapFields.ATTN_TP_RANK, tpRank, attnTpSize, BootstrapFields.ATTN_TP_SIZE);
		}
		if (why == null) {
			why = misfit(BootstrapFields.PP_RANK, ppRank, ppSize, BootstrapFields.PP_SIZE);
		}
		return why;
	}

	/**
	 * @param layout a rank's layout
	 * @return {@code null} when the rank fits these sizes, else why not, naming the field
	 */
	public @Nullable String misfit(ParallelLayout layout) {
		return misfit(dpGroupField(layout), layout.dpGroup(), layout.attnCpRank(), layout.attnTpRank(),
				layout.ppRank());
	}

	/**
	 * @param layout a rank's layout
	 * @return the registration field its DP group comes from: {@code attn_dp_rank} with DP attention (system DP size
	 *         1), else {@code system_dp_rank}
	 */
	public static String dpGroupField(ParallelLayout layout) {
		return dpGroupField(layout.systemDpSize());
	}

	/**
	 * @param systemDpSize a registration's system DP size
	 * @return the registration field its DP group comes from
	 */
	public static String dpGroupField(int systemDpSize) {
		return systemDpSize == 1 ? BootstrapFields.ATTN_DP_RANK : BootstrapFields.SYSTEM_DP_RANK;
	}

	/** @return the sizes as a parallel-info answer of kvferry's API */
	public PrefillParallelInfo toParallelInfo() {
		return new PrefillParallelInfo(attnTpSize, dpSize, ppSize, pageSize);
	}

	private static @Nullable String misfit(String field, int rank, int size, String sizeName) {
		return rank < size ? null : field + " : " + rank + " (expected: 0.." + (size - 1) + " for the " + sizeName
				+ " " + size + " fixed by the instance's first registration)";
	}

	@Override
	public String toString() {
		return "dp=" + dpSize + " cp=" + attnCpSize + " tp=" + attnTpSize + " pp=" + ppSize + " page_size=" + pageSize;
	}
}
