package io.kvferry.bootstrap.server.internal;

import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillSizes;

/**
 * One validated {@code PUT /route} body: a rank publishing its endpoint. The fields read are
 * {@link BootstrapFields#REGISTRATION}. Accepts the older protocol's fields (with {@code role})
 * and today's SGLang fields ({@code attn_cp_size}, {@code attn_cp_rank}, {@code kv_cache_dtype},
 * {@code load_balance_method}, {@code enable_dsa_cache_layer_split}, {@code prefill_http_port}, no {@code role}).
 * <p>
 * Any other field is kept as sent in {@link #instanceFields()}, unless its name says it describes the rank rather than
 * the instance (it starts with {@code rank_} or ends with {@code _rank}) or it is a field of the parallel-info answer
 * that the server computes itself ({@link PrefillTopology#ANSWER_FIELDS}). A release of SGLang that adds an
 * instance-level field to its registration and to its parallel-info answer thus finds it in the answer, unchanged.
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
 * @param followBootstrapRoom whether the prefill picks its DP rank from the room: {@code load_balance_method} absent
 *        or {@code follow_bootstrap_room}, as SGLang's server reads it (an explicit {@code null} is another method)
 * @param enableDsaCacheLayerSplit whether DSA cache layers are split across CP ranks (false when absent or null)
 * @param prefillHttpPort the prefill instance's HTTP API port; {@code null} when absent
 * @param instanceFields the fields this server does not know, in body order, as sent (never {@code null})
 * @param incarnation the rank's {@code kvferry_incarnation}, kept with its endpoint; 0 when absent
 * @param moreEndpoints the rank's {@code kvferry_more_endpoints} (its further interfaces), kept with its endpoint; none
 *        when absent
 */
public record Registration(String role, int attnTpSize, int attnTpRank, int attnCpSize, int attnCpRank,
		int attnDpSize, int attnDpRank, int ppSize, int ppRank, int systemDpSize, int systemDpRank, String rankIp,
		int rankPort, int pageSize, String kvCacheDtype, boolean followBootstrapRoom, boolean enableDsaCacheLayerSplit,
		Integer prefillHttpPort, Map<String, JsonNode> instanceFields, long incarnation, List<HostPort> moreEndpoints) {

	/** SGLang's role string for prefill ranks. */
	public static final String PREFILL = BootstrapFields.PREFILL_ROLE;

	/** SGLang's default prefill DP dispatch: the DP rank follows from the bootstrap room. */
	public static final String FOLLOW_BOOTSTRAP_ROOM = BootstrapFields.FOLLOW_BOOTSTRAP_ROOM_METHOD;

	/** Largest accepted size of any one parallel dimension; far above any real deployment. */
	public static final int MAX_SIZE = 65536;

	private static final int MAX_RANK_IP_LENGTH = 255;

	/** The fields {@link #parse} reads; none of them is passed through. */
	private static final Set<String> KNOWN_FIELDS = Set.copyOf(BootstrapFields.REGISTRATION);

	public Registration {
		Objects.requireNonNull(role, "role");
		Objects.requireNonNull(rankIp, "rankIp");
		instanceFields = Collections.unmodifiableMap(new LinkedHashMap<>(instanceFields));
		moreEndpoints = List.copyOf(moreEndpoints);
	}

	/** A registration of a rank with one interface. */
	public Registration(String role, int attnTpSize, int attnTpRank, int attnCpSize, int attnCpRank, int attnDpSize,
			int attnDpRank, int ppSize, int ppRank, int systemDpSize, int systemDpRank, String rankIp, int rankPort,
			int pageSize, String kvCacheDtype, boolean followBootstrapRoom, boolean enableDsaCacheLayerSplit,
			Integer prefillHttpPort, Map<String, JsonNode> instanceFields, long incarnation) {
		this(role, attnTpSize, attnTpRank, attnCpSize, attnCpRank, attnDpSize, attnDpRank, ppSize, ppRank,
				systemDpSize, systemDpRank, rankIp, rankPort, pageSize, kvCacheDtype, followBootstrapRoom,
				enableDsaCacheLayerSplit, prefillHttpPort, instanceFields, incarnation, List.of());
	}

	/** A registration without an incarnation. */
	public Registration(String role, int attnTpSize, int attnTpRank, int attnCpSize, int attnCpRank, int attnDpSize,
			int attnDpRank, int ppSize, int ppRank, int systemDpSize, int systemDpRank, String rankIp, int rankPort,
			int pageSize, String kvCacheDtype, boolean followBootstrapRoom, boolean enableDsaCacheLayerSplit,
			Integer prefillHttpPort, Map<String, JsonNode> instanceFields) {
		this(role, attnTpSize, attnTpRank, attnCpSize, attnCpRank, attnDpSize, attnDpRank, ppSize, ppRank,
				systemDpSize, systemDpRank, rankIp, rankPort, pageSize, kvCacheDtype, followBootstrapRoom,
				enableDsaCacheLayerSplit, prefillHttpPort, instanceFields, 0);
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
		String role = Json.optionalString(body, BootstrapFields.ROLE);
		int attnTpSize = size(body, BootstrapFields.ATTN_TP_SIZE);
		int attnTpRank = rank(body, BootstrapFields.ATTN_TP_RANK, attnTpSize, BootstrapFields.ATTN_TP_SIZE);
		int attnCpSize = optionalSize(body, BootstrapFields.ATTN_CP_SIZE);
		int attnCpRank = optionalRank(body, BootstrapFields.ATTN_CP_RANK, attnCpSize, BootstrapFields.ATTN_CP_SIZE);
		int attnDpSize = size(body, BootstrapFields.ATTN_DP_SIZE);
		int attnDpRank = rank(body, BootstrapFields.ATTN_DP_RANK, attnDpSize, BootstrapFields.ATTN_DP_SIZE);
		int ppSize = size(body, BootstrapFields.PP_SIZE);
		int ppRank = rank(body, BootstrapFields.PP_RANK, ppSize, BootstrapFields.PP_SIZE);
		int systemDpSize = size(body, BootstrapFields.SYSTEM_DP_SIZE);
		int systemDpRank = Json.requiredInt(body, BootstrapFields.SYSTEM_DP_RANK);
		// With DP attention SGLang sends system_dp_size 1 and may still send the scheduler's DP rank here; the value
		// is only used (and so only bounded by the size) when system_dp_size > 1.
		if (systemDpRank < 0 || (systemDpSize > 1 && systemDpRank >= systemDpSize)) {
			throw RequestException.badRequest("system_dp_rank : " + systemDpRank + " (expected: "
					+ (systemDpSize > 1 ? "0.." + (systemDpSize - 1) + " for system_dp_size " + systemDpSize : ">= 0")
					+ ")");
		}
		String rankIp = Json.requiredString(body, BootstrapFields.RANK_IP);
		checkRankIp(rankIp);
		int rankPort = Json.requiredIntOrIntText(body, BootstrapFields.RANK_PORT);
		if (rankPort < 1 || rankPort > 65535) {
			throw RequestException.badRequest("rank_port : " + rankPort + " (expected: 1..65535)");
		}
		int pageSize = Json.requiredIntOrIntText(body, BootstrapFields.PAGE_SIZE);
		if (pageSize < 1) {
			throw RequestException.badRequest("page_size : " + pageSize + " (expected: >= 1)");
		}
		String kvCacheDtype = Json.optionalString(body, BootstrapFields.KV_CACHE_DTYPE);
		String loadBalanceMethod = Json.optionalString(body, BootstrapFields.LOAD_BALANCE_METHOD);
		boolean followBootstrapRoom = body.has(BootstrapFields.LOAD_BALANCE_METHOD)
				? FOLLOW_BOOTSTRAP_ROOM.equals(loadBalanceMethod) : true;
		boolean enableDsaCacheLayerSplit = Json.optionalBoolean(body, BootstrapFields.ENABLE_DSA_CACHE_LAYER_SPLIT,
				false);
		Integer prefillHttpPort = Json.optionalIntOrIntText(body, BootstrapFields.PREFILL_HTTP_PORT);
		if (prefillHttpPort != null && (prefillHttpPort < 1 || prefillHttpPort > 65535)) {
			throw RequestException.badRequest("prefill_http_port : " + prefillHttpPort + " (expected: 1..65535)");
		}
		long incarnation;
		List<HostPort> moreEndpoints;
		try {
			incarnation = BootstrapFields.parseIncarnation(Json.optionalString(body, BootstrapFields.INCARNATION));
			moreEndpoints = BootstrapFields.parseEndpoints(Json.optionalString(body, BootstrapFields.MORE_ENDPOINTS));
		}
		catch (IllegalArgumentException e) {
			throw RequestException.badRequest(e.getMessage());
		}
		return new Registration(role == null ? PREFILL : role, attnTpSize, attnTpRank, attnCpSize, attnCpRank,
				attnDpSize, attnDpRank, ppSize, ppRank, systemDpSize, systemDpRank, rankIp, rankPort, pageSize,
				kvCacheDtype, followBootstrapRoom, enableDsaCacheLayerSplit, prefillHttpPort, instanceFields(body),
				incarnation, moreEndpoints);
	}

	/** @return the body's fields that are neither read here, nor per-rank by name, nor computed for the answer */
	private static Map<String, JsonNode> instanceFields(JsonNode body) {
		Map<String, JsonNode> fields = new LinkedHashMap<>();
		for (Iterator<Map.Entry<String, JsonNode>> it = body.fields(); it.hasNext();) {
			Map.Entry<String, JsonNode> field = it.next();
			String name = field.getKey();
			if (!KNOWN_FIELDS.contains(name) && !PrefillTopology.ANSWER_FIELDS.contains(name)
					&& !name.startsWith("rank_") && !name.endsWith("_rank")) {
				fields.put(name, field.getValue());
			}
		}
		return fields;
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
		return PrefillSizes.dpGroupField(systemDpSize);
	}

	/** @return where this rank goes in the table */
	public RankKey key() {
		return new RankKey(dpGroup(), attnCpRank, attnTpRank, ppRank);
	}

	/** @return the endpoint decode ranks will be given */
	public RankEndpoint endpoint() {
		return new RankEndpoint(rankIp, rankPort, incarnation, moreEndpoints);
	}

	/** @return the instance-wide fields this registration declares */
	public PrefillTopology topology() {
		return new PrefillTopology(attnTpSize, attnCpSize, dpSize(), ppSize, pageSize, kvCacheDtype,
				followBootstrapRoom, enableDsaCacheLayerSplit, prefillHttpPort, instanceFields);
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
