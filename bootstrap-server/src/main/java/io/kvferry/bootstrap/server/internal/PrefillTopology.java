package io.kvferry.bootstrap.server.internal;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A prefill instance's sizes, fixed by its first registration.
 *
 * @param attnTpSize attention TP size
 * @param attnCpSize attention CP size (1 for the seed's protocol)
 * @param dpSize DP size
 * @param ppSize pipeline size
 * @param pageSize KV page size in tokens
 * @param kvCacheDtype KV cache dtype, {@code null} when the prefill did not say
 * @param followBootstrapRoom whether the prefill picks its DP rank from the bootstrap room
 */
public record PrefillTopology(int attnTpSize, int attnCpSize, int dpSize, int ppSize, int pageSize,
		String kvCacheDtype, boolean followBootstrapRoom) {

	/** @return dp × cp × tp × pp: how many distinct ranks make the instance complete */
	public long totalRanks() {
		// Each size is at most Registration.MAX_SIZE (2^16): the product of four could overflow a long, so saturate.
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
	 * @param other another registration's sizes
	 * @return whether both describe the same parallel shape and page size
	 */
	public boolean sameShape(PrefillTopology other) {
		return attnTpSize == other.attnTpSize && attnCpSize == other.attnCpSize && dpSize == other.dpSize
				&& ppSize == other.ppSize && pageSize == other.pageSize;
	}

	/** @return the seed's parallel-info answer ({@code GET /route} with engine_rank, target_dp_group, pp all −1) */
	public Map<String, Object> toLegacyJson() {
		Map<String, Object> json = new LinkedHashMap<>();
		json.put("prefill_attn_tp_size", attnTpSize);
		json.put("prefill_dp_size", dpSize);
		json.put("prefill_pp_size", ppSize);
		json.put("prefill_page_size", pageSize);
		return json;
	}

	/**
	 * @return today's SGLang parallel-info answer: its {@code PrefillServerInfo} with every field, the decode-side
	 *         scratch fields null; no field beyond those, since SGLang's decode rejects unknown keys
	 */
	public Map<String, Object> toJson() {
		Map<String, Object> json = new LinkedHashMap<>();
		json.put("attn_tp_size", attnTpSize);
		json.put("attn_cp_size", attnCpSize);
		json.put("dp_size", dpSize);
		json.put("pp_size", ppSize);
		json.put("page_size", pageSize);
		json.put("kv_cache_dtype", kvCacheDtype);
		json.put("follow_bootstrap_room", followBootstrapRoom);
		json.put("target_tp_rank", null);
		json.put("target_tp_ranks", null);
		json.put("target_cp_ranks", null);
		json.put("target_pp_ranks", null);
		json.put("required_dst_info_num", null);
		json.put("required_prefill_response_num", null);
		return json;
	}

	@Override
	public String toString() {
		return "dp=" + dpSize + " cp=" + attnCpSize + " tp=" + attnTpSize + " pp=" + ppSize + " page_size=" + pageSize
				+ (kvCacheDtype == null ? "" : " kv_cache_dtype=" + kvCacheDtype);
	}
}
