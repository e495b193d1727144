package io.kvferry.bootstrap.server.internal;

/**
 * Where a prefill rank sits in its instance.
 *
 * @param dpGroup DP group (attn_dp_rank with DP attention, else system_dp_rank)
 * @param cpRank attention CP rank (0 in SGLang's older protocol, which has no CP)
 * @param tpRank attention TP rank
 * @param ppRank pipeline rank
 */
public record RankKey(int dpGroup, int cpRank, int tpRank, int ppRank) {

	@Override
	public String toString() {
		return "dp=" + dpGroup + " cp=" + cpRank + " tp=" + tpRank + " pp=" + ppRank;
	}
}
