package io.kvferry.bootstrap;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import org.jspecify.annotations.Nullable;

/**
 * SGLang's bootstrap JSON, named once: the registration a prefill rank sends with {@code PUT /route}, the two
 * parallel-info answers of {@code GET /route} (today's and the older protocol's), a rank's endpoint, and what a
 * registry stores. The HTTP client, the bootstrap server and the etcd registry all name fields through this class, and
 * {@link #registration(PrefillRegistration)} is the one encoder of a registration, so a new field is added here and
 * nowhere else.
 *
 * <p>Encoders answer ordered maps of field names to strings, numbers and booleans, which any JSON library writes as
 * they are: core carries no JSON library.
 */
public final class BootstrapFields {

	// ---- A prefill rank's registration (PUT /route) -------------------------------------------------------------

	/** The rank's role; SGLang's older protocol only, today's SGLang sends none. */
	public static final String ROLE = "role";
	public static final String ATTN_TP_SIZE = "attn_tp_size";
	public static final String ATTN_TP_RANK = "attn_tp_rank";
	public static final String ATTN_CP_SIZE = "attn_cp_size";
	public static final String ATTN_CP_RANK = "attn_cp_rank";
	public static final String ATTN_DP_SIZE = "attn_dp_size";
	public static final String ATTN_DP_RANK = "attn_dp_rank";
	public static final String PP_SIZE = "pp_size";
	public static final String PP_RANK = "pp_rank";
	public static final String SYSTEM_DP_SIZE = "system_dp_size";
	public static final String SYSTEM_DP_RANK = "system_dp_rank";
	public static final String RANK_IP = "rank_ip";
	public static final String RANK_PORT = "rank_port";
	public static final String PAGE_SIZE = "page_size";
	public static final String KV_CACHE_DTYPE = "kv_cache_dtype";
	public static final String LOAD_BALANCE_METHOD = "load_balance_method";
	public static final String ENABLE_DSA_CACHE_LAYER_SPLIT = "enable_dsa_cache_layer_split";
	public static final String PREFILL_HTTP_PORT = "prefill_http_port";

	/**
	 * kvferry's own instance-level field: every CP rank sends its share of each room. A bootstrap server does not read
	 * it; it passes it through to its parallel-info answer as it does any instance-level field it does not know.
	 */
	public static final String ALL_CP_RANKS_TRANSFER = "kvferry_all_cp_ranks_transfer";

	/**
	 * kvferry's own per-rank field: the rank's incarnation, a random id drawn when its manager started, as 16
	 * lower-case hex digits ({@link #incarnationText}). A bootstrap server that knows it keeps it with the rank's
	 * endpoint and returns it in the rank's {@code GET /route} answer; SGLang's server ignores it and SGLang's decode
	 * does not read it. Absent means unknown.
	 */
	public static final String INCARNATION = "kvferry_incarnation";

	/**
	 * kvferry's own per-rank field: the rank's further endpoints, one per further network interface, as
	 * {@code host:port} texts ({@code [v6]:port} for IPv6) joined by commas. {@code rank_ip:rank_port} stays the first
	 * endpoint, the one SGLang's decode dials; kvferry's decode deals a session's stripes over all of them. A bootstrap
	 * server that knows it keeps it with the rank's endpoint and returns it in the rank's {@code GET /route} answer;
	 * SGLang's server and decode ignore it. Absent means none.
	 */
	public static final String MORE_ENDPOINTS = "kvferry_more_endpoints";

	/** The most endpoints a rank may publish, its first included: more interfaces than any host carries. */
	public static final int MAX_ENDPOINTS = 8;

	/** Every registration field a bootstrap server reads, in SGLang's order; any other is passed through or ignored. */
	public static final List<String> REGISTRATION = List.of(ROLE, ATTN_TP_SIZE, ATTN_TP_RANK, ATTN_CP_SIZE,
			ATTN_CP_RANK, ATTN_DP_SIZE, ATTN_DP_RANK, PP_SIZE, PP_RANK, SYSTEM_DP_SIZE, SYSTEM_DP_RANK, RANK_IP,
			RANK_PORT, PAGE_SIZE, KV_CACHE_DTYPE, LOAD_BALANCE_METHOD, ENABLE_DSA_CACHE_LAYER_SPLIT, PREFILL_HTTP_PORT,
			INCARNATION, MORE_ENDPOINTS);

	/** SGLang's role string for prefill ranks. */
	public static final String PREFILL_ROLE = "Prefill";

	/** SGLang's default prefill DP dispatch, {@value}: the DP rank follows from the bootstrap room. */
	public static final String FOLLOW_BOOTSTRAP_ROOM_METHOD = "follow_bootstrap_room";

	// ---- Today's parallel-info answer (GET /route with prefill_dp_rank, cp, tp and pp all -1) -------------------

	public static final String DP_SIZE = "dp_size";
	public static final String FOLLOW_BOOTSTRAP_ROOM = "follow_bootstrap_room";

	/** The instance's sizes: what the first registration fixes and what a registry stores of it. */
	public static final List<String> SIZES = List.of(ATTN_TP_SIZE, ATTN_CP_SIZE, DP_SIZE, PP_SIZE, PAGE_SIZE);

	/** SGLang's instance-level fields of its {@code PrefillServerInfo}, in its order. */
	public static final List<String> PARALLEL_INFO = List.of(ATTN_TP_SIZE, ATTN_CP_SIZE, DP_SIZE, PP_SIZE, PAGE_SIZE,
			KV_CACHE_DTYPE, FOLLOW_BOOTSTRAP_ROOM, ENABLE_DSA_CACHE_LAYER_SPLIT, PREFILL_HTTP_PORT);

	/**
	 * SGLang's decode-side scratch fields of its {@code PrefillServerInfo}: always {@code null} on the wire, yet its
	 * decode refuses an answer without them.
	 */
	public static final List<String> PARALLEL_INFO_SCRATCH = List.of("target_tp_rank", "target_tp_ranks",
			"target_cp_ranks", "target_pp_ranks", "required_dst_info_num", "required_prefill_response_num");

	// ---- The older protocol's parallel-info answer (GET /route with engine_rank, dp group and pp all -1) --------

	public static final String PREFILL_ATTN_TP_SIZE = "prefill_attn_tp_size";
	public static final String PREFILL_DP_SIZE = "prefill_dp_size";
	public static final String PREFILL_PP_SIZE = "prefill_pp_size";
	public static final String PREFILL_PAGE_SIZE = "prefill_page_size";

	/** The older answer's fields, in SGLang's order. */
	public static final List<String> LEGACY_PARALLEL_INFO = List.of(PREFILL_ATTN_TP_SIZE, PREFILL_DP_SIZE,
			PREFILL_PP_SIZE, PREFILL_PAGE_SIZE);

	// ---- A rank's endpoint (GET /route for one rank; a registry's rank value) -------------------------------------

	/** The endpoint's fields, in SGLang's order. */
	public static final List<String> ENDPOINT = List.of(RANK_IP, RANK_PORT);

	// Room for the most further endpoints a rank may publish, each of a host of up to 255 characters, brackets and port.
	private static final int MAX_ENDPOINTS_TEXT = (MAX_ENDPOINTS - 1) * (255 + 2 + 6 + 1);

	private BootstrapFields() {
	}

	/**
	 * The {@code PUT /route} body of a registration. The CP fields, {@value #ENABLE_DSA_CACHE_LAYER_SPLIT} and
	 * {@value #ALL_CP_RANKS_TRANSFER} are written only when they say something, so that a body without them is the
	 * one older servers were always sent.
	 *
	 * @param registration what a prefill rank publishes
	 * @return field names to values, in SGLang's order
	 */
	public static Map<String, Object> registration(PrefillRegistration registration) {
		Objects.requireNonNull(registration, "registration");
		ParallelLayout layout = registration.layout();
		Map<String, Object> body = new LinkedHashMap<>();
		body.put(ROLE, registration.role());
		body.put(ATTN_TP_SIZE, layout.attnTpSize());
		body.put(ATTN_TP_RANK, layout.attnTpRank());
		body.put(ATTN_DP_SIZE, layout.attnDpSize());
		body.put(ATTN_DP_RANK, layout.attnDpRank());
		body.put(PP_SIZE, layout.ppSize());
		body.put(PP_RANK, layout.ppRank());
		body.put(SYSTEM_DP_SIZE, layout.systemDpSize());
		body.put(SYSTEM_DP_RANK, layout.systemDpRank());
		body.put(RANK_IP, registration.rankIp());
		body.put(RANK_PORT, registration.rankPort());
		body.put(PAGE_SIZE, registration.pageSize());
		if (layout.attnCpSize() > 1) {
			body.put(ATTN_CP_SIZE, layout.attnCpSize());
			body.put(ATTN_CP_RANK, layout.attnCpRank());
		}
		if (registration.dsaCacheLayerSplit()) {
			body.put(ENABLE_DSA_CACHE_LAYER_SPLIT, true);
		}
		if (registration.allCpRanksTransfer()) {
			body.put(ALL_CP_RANKS_TRANSFER, true);
		}
		if (registration.incarnation() != PrefillRegistration.UNKNOWN_INCARNATION) {
			body.put(INCARNATION, incarnationText(registration.incarnation()));
		}
		if (!registration.moreEndpoints().isEmpty()) {
			body.put(MORE_ENDPOINTS, endpointsText(registration.moreEndpoints()));
		}
		return body;
	}

	/**
	 * An endpoint with the rank's incarnation, as kvferry's bootstrap server and registry answer it.
	 *
	 * @param rankIp the address as the rank registered it
	 * @param rankPort its port
	 * @param incarnation its incarnation, or {@link PrefillRegistration#UNKNOWN_INCARNATION} to leave the field out
	 * @return {@link #endpoint(String, int)} plus {@value #INCARNATION} when known
	 */
	public static Map<String, Object> endpoint(String rankIp, int rankPort, long incarnation) {
		Map<String, Object> json = endpoint(rankIp, rankPort);
		if (incarnation != PrefillRegistration.UNKNOWN_INCARNATION) {
			json.put(INCARNATION, incarnationText(incarnation));
		}
		return json;
	}

	/**
	 * An endpoint with the rank's incarnation and its further endpoints, as kvferry's bootstrap server and registry
	 * answer it.
	 *
	 * @param more the rank's further endpoints; none leaves {@value #MORE_ENDPOINTS} out
	 * @return {@link #endpoint(String, int, long)} plus {@value #MORE_ENDPOINTS} when there are any
	 */
	public static Map<String, Object> endpoint(String rankIp, int rankPort, long incarnation, List<HostPort> more) {
		Map<String, Object> json = endpoint(rankIp, rankPort, incarnation);
		if (!more.isEmpty()) {
			json.put(MORE_ENDPOINTS, endpointsText(more));
		}
		return json;
	}

	/**
	 * @param endpoints a rank's further endpoints
	 * @return the value of {@value #MORE_ENDPOINTS}: their {@code host:port} texts joined by commas
	 */
	public static String endpointsText(List<HostPort> endpoints) {
		return endpoints.stream().map(HostPort::toString).collect(Collectors.joining(","));
	}

	/**
	 * Reads what a peer sent as {@value #MORE_ENDPOINTS}: a bootstrap server, a registry or a rank registering.
	 *
	 * @param text the value, or null when absent
	 * @return the endpoints, in order; none for null
	 * @throws IllegalArgumentException naming the problem when the text is longer than {@value #MAX_ENDPOINTS} - 1
	 *         endpoints may be, names more of them, repeats one, or one is not {@code host:port} with a port 1..65535
	 */
	public static List<HostPort> parseEndpoints(@Nullable String text) {
		if (text == null) {
			return List.of();
		}
		if (text.length() > MAX_ENDPOINTS_TEXT) {
			throw new IllegalArgumentException(MORE_ENDPOINTS + " : " + text.length() + " characters (expected: at most "
					+ MAX_ENDPOINTS_TEXT + ")");
		}
		String[] parts = text.split(",", -1);
		if (parts.length > MAX_ENDPOINTS - 1) {
			throw new IllegalArgumentException(MORE_ENDPOINTS + " : " + parts.length + " endpoints (expected: at most "
					+ (MAX_ENDPOINTS - 1) + ", the first being rank_ip:rank_port)");
		}
		List<HostPort> endpoints = new ArrayList<>(parts.length);
		for (String part : parts) {
			HostPort endpoint;
			try {
				endpoint = HostPort.parse(part);
			}
			catch (IllegalArgumentException e) {
				throw new IllegalArgumentException(MORE_ENDPOINTS + " : " + e.getMessage(), e);
			}
			if (endpoint.port() < 1 || endpoint.host().chars().anyMatch(c -> c <= ' ' || c == 0x7f)) {
				throw new IllegalArgumentException(MORE_ENDPOINTS + " : '" + part.strip()
						+ "' (expected: host:port with a port 1..65535 and no whitespace or control character)");
			}
			if (endpoints.contains(endpoint)) {
				throw new IllegalArgumentException(MORE_ENDPOINTS + " : " + endpoint + " twice");
			}
			endpoints.add(endpoint);
		}
		return List.copyOf(endpoints);
	}

	/**
	 * A text, not a JSON number: a 64-bit id does not survive a double (JavaScript, many JSON libraries).
	 *
	 * @param incarnation a rank's incarnation
	 * @return its 16 lower-case hex digits
	 */
	public static String incarnationText(long incarnation) {
		return String.format("%016x", incarnation);
	}

	/**
	 * @param text the value of {@value #INCARNATION}, or null when absent
	 * @return the incarnation, {@link PrefillRegistration#UNKNOWN_INCARNATION} for null
	 * @throws IllegalArgumentException when it is not 1..16 hex digits
	 */
	public static long parseIncarnation(@Nullable String text) {
		if (text == null) {
			return PrefillRegistration.UNKNOWN_INCARNATION;
		}
		if (text.isEmpty() || text.length() > 16 || !text.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
			throw new IllegalArgumentException(INCARNATION + " : \"" + (text.length() > 20 ? text.substring(0, 20)
					+ "..." : text) + "\" (expected: 1..16 hex digits)");
		}
		return Long.parseUnsignedLong(text, 16);
	}

	/**
	 * @param rankIp the address as the rank registered it
	 * @param rankPort its port
	 * @return {@code {"rank_ip": .., "rank_port": ..}}, in SGLang's order
	 */
	public static Map<String, Object> endpoint(String rankIp, int rankPort) {
		Map<String, Object> json = new LinkedHashMap<>();
		json.put(RANK_IP, Objects.requireNonNull(rankIp, "rankIp"));
		json.put(RANK_PORT, rankPort);
		return json;
	}

	/**
	 * @param sizes an instance's sizes
	 * @return {@link #SIZES} to their values, as a registry stores them
	 */
	public static Map<String, Object> sizes(PrefillSizes sizes) {
		Map<String, Object> json = new LinkedHashMap<>();
		json.put(ATTN_TP_SIZE, sizes.attnTpSize());
		json.put(ATTN_CP_SIZE, sizes.attnCpSize());
		json.put(DP_SIZE, sizes.dpSize());
		json.put(PP_SIZE, sizes.ppSize());
		json.put(PAGE_SIZE, sizes.pageSize());
		return json;
	}

	/**
	 * @param sizes an instance's sizes
	 * @return the older protocol's parallel-info answer, {@link #LEGACY_PARALLEL_INFO} to their values
	 */
	public static Map<String, Object> legacyParallelInfo(PrefillSizes sizes) {
		Map<String, Object> json = new LinkedHashMap<>();
		json.put(PREFILL_ATTN_TP_SIZE, sizes.attnTpSize());
		json.put(PREFILL_DP_SIZE, sizes.dpSize());
		json.put(PREFILL_PP_SIZE, sizes.ppSize());
		json.put(PREFILL_PAGE_SIZE, sizes.pageSize());
		return json;
	}
}
