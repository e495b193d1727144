package io.kvferry.bootstrap.server.internal;

import java.util.Objects;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One validated {@code PUT /route} body: a rank publishing its endpoint. Accepts the seed's fields (with {@code role})
 * and today's SGLang fields ({@code attn_cp_size}, {@code attn_cp_rank}, {@code kv_cache_dtype},
 * {@code load_balance_method}, no {@code role}); anything else in the body is ignored.
 *
 * @param role {@code Prefill} for ranks that serve KV ({@code Prefill} when the body has no role)
 * @param attnTpSize attention TP size, 1..{@link #MAX_SIZE}
 * @param attnTpRank attention TP rank, 0..attnTpSize-1
 * @param attnCpSize attention CP size (1 when absent)
 * @param attnCpRank attention CP rank (0 when absent)
 * @param attnDpSize attention DP size
 * @param attnDpRank attention DP rank
 * @param ppSize pipeline size
 * @param ppRank pipeline rank
 * @param systemDpSize 1 with DP attention (the DP group is then attnDpRank), else the DP size
 * @param systemDpRank the scheduler's DP rank
 * @param rankIp the address decode ranks connect to, as sent
 * @param rankPort 1..65535
 * @param pageSize KV page size in tokens, at least 1
 * @param kvCacheDtype e.g. {@code auto}; {@code null} when absent
 * @param loadBalanceMethod prefill DP dispatch method; {@code null} when absent
 */
public record Registration(String role, int attnTpSize, int attnTpRank, int attnCpSize, int attnCpRank,
		int attnDpSize, int attnDpRank, int ppSize, int ppRank, int systemDpSize, int systemDpRank, String rankIp,
		int rankPort, int pageSize, String kvCacheDtype, String loadBalanceMethod) {

	/** SGLang's role string for prefill ranks. */
	public static final String PREFILL = "Prefill";

	/** SGLang's default prefill DP dispatch: the DP rank follows from the bootstrap room. */
	public static final String FOLLOW_BOOTSTRAP_ROOM = "follow_bootstrap_room";

	/** Largest accepted size of any one parallel dimension; far above any real deployment. */
	public static final int MAX_SIZE = 65536;

	private static final int MAX_RANK_IP_LENGTH = 255;

	public Registration {
		Objects.requireNonNull(role, "role");
		Objects.requireNonNull(rankIp, "rankIp");
	}

	/**
	 * Validates a request object.
	 *
	 * @param body the parsed JSON object
	 * @return the registration
	 * @throws RequestException 400 naming the first missing, mistyped or out-of-range field
	 */
	public static Registration parse(JsonNode body) {
		Objects.requireNonNull(body, "body");
		String role = Json.optionalString(body, "role");
		int attnTpSize = size(body, "attn_tp_size");
		int attnTpRank = rank(body, "attn_tp_rank", attnTpSize, "attn_tp_size");
		int attnCpSize = optionalSize(body, "attn_cp_size");
		int attnCpRank = optionalRank(body, "attn_cp_rank", attnCpSize, "attn_cp_size");
		int attnDpSize = size(body, "attn_dp_size");
		int attnDpRank = rank(body, "attn_dp_rank", attnDpSize, "attn_dp_size");
		int ppSize = size(body, "pp_size");
		int ppRank = rank(body, "pp_rank", ppSize, "pp_size");
		int systemDpSize = size(body, "system_dp_size");
		int systemDpRank = Json.requiredInt(body, "system_dp_rank");
		// With DP attention SGLang sends system_dp_size 1 and may still send the scheduler's DP rank here; the value
		// is only used (and so only bounded by the size) when system_dp_size > 1.
		if (systemDpRank < 0 || (systemDpSize > 1 && systemDpRank >= systemDpSize)) {
			throw RequestException.badRequest("system_dp_rank : " + systemDpRank + " (expected: "
					+ (systemDpSize > 1 ? "0.." + (systemDpSize - 1) + " for system_dp_size " + systemDpSize : ">= 0")
					+ ")");
		}
		String rankIp = Json.requiredString(body, "rank_ip");
		checkRankIp(rankIp);
		int rankPort = Json.requiredIntOrIntText(body, "rank_port");
		if (rankPort < 1 || rankPort > 65535) {
			throw RequestException.badRequest("rank_port : " + rankPort + " (expected: 1..65535)");
		}
		int pageSize = Json.requiredIntOrIntText(body, "page_size");
		if (pageSize < 1) {
			throw RequestException.badRequest("page_size : " + pageSize + " (expected: >= 1)");
		}
		String kvCacheDtype = Json.optionalString(body, "kv_cache_dtype");
		String loadBalanceMethod = Json.optionalString(body, "load_balance_method");
		return new Registration(role == null ? PREFILL : role, attnTpSize, attnTpRank, attnCpSize, attnCpRank,
				attnDpSize, attnDpRank, ppSize, ppRank, systemDpSize, systemDpRank, rankIp, rankPort, pageSize,
				kvCacheDtype, loadBalanceMethod);
	}

	/** @return whether this rank serves KV and so belongs in the route table */
	public boolean isPrefill() {
		return PREFILL.equals(role);
	}

	/** @return the instance's DP size: attn_dp_size with DP attention (system_dp_size 1), else system_dp_size */
	public int dpSize() {
		return systemDpSize == 1 ? attnDpSize : systemDpSize;
	}

	/** @return the DP group this rank belongs to: attn_dp_rank when system_dp_size is 1, else system_dp_rank */
	public int dpGroup() {
		return systemDpSize == 1 ? attnDpRank : systemDpRank;
	}

	/** @return the request field {@link #dpGroup()} came from, for messages */
	public String dpGroupField() {
		return systemDpSize == 1 ? "attn_dp_rank" : "system_dp_rank";
	}

	/** @return where this rank goes in the table */
	public RankKey key() {
		return new RankKey(dpGroup(), attnCpRank, attnTpRank, ppRank);
	}

	/** @return the endpoint decode ranks will be given */
	public RankEndpoint endpoint() {
		return new RankEndpoint(rankIp, rankPort);
	}

	/** @return the instance-wide sizes this registration declares */
	public PrefillTopology topology() {
		return new PrefillTopology(attnTpSize, attnCpSize, dpSize(), ppSize, pageSize, kvCacheDtype,
				loadBalanceMethod == null || FOLLOW_BOOTSTRAP_ROOM.equals(loadBalanceMethod));
	}

	private static int size(JsonNode body, String field) {
		return checkSize(field, Json.requiredInt(body, field));
	}

	private static int optionalSize(JsonNode body, String field) {
		return checkSize(field, Json.optionalInt(body, field, 1));
	}

	private static int checkSize(String field, int size) {
		if (size < 1 || size > MAX_SIZE) {
			throw RequestException.badRequest(field + " : " + size + " (expected: 1.." + MAX_SIZE + ")");
		}
		return size;
	}

	private static int rank(JsonNode body, String field, int size, String sizeField) {
		return checkRank(field, Json.requiredInt(body, field), size, sizeField);
	}

	private static int optionalRank(JsonNode body, String field, int size, String sizeField) {
		return checkRank(field, Json.optionalInt(body, field, 0), size, sizeField);
	}

	private static int checkRank(String field, int rank, int size, String sizeField) {
		if (rank < 0 || rank >= size) {
			throw RequestException.badRequest(field + " : " + rank + " (expected: 0.." + (size - 1) + " for "
					+ sizeField + " " + size + ")");
		}
		return rank;
	}

	private static void checkRankIp(String rankIp) {
		if (rankIp.isEmpty() || rankIp.length() > MAX_RANK_IP_LENGTH) {
			throw RequestException.badRequest("rank_ip : \"" + (rankIp.length() > 40 ? rankIp.substring(0, 40) + "..."
					: rankIp) + "\" (expected: an IP address or hostname of 1.." + MAX_RANK_IP_LENGTH + " characters)");
		}
		for (int i = 0; i < rankIp.length(); i++) {
			char c = rankIp.charAt(i);
			if (c <= ' ' || c == 0x7f) {
				throw RequestException.badRequest("rank_ip : contains whitespace or a control character at index " + i
						+ " (expected: an IP address or hostname)");
			}
		}
	}
}
