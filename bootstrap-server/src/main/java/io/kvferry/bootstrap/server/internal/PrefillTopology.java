package io.kvferry.bootstrap.server.internal;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A prefill instance's instance-level fields, as its registrations declare them and as SGLang's server keeps them:
 * each is fixed by the first registration, except {@code kv_cache_dtype} and {@code prefill_http_port}, which the
 * first registration that carries a value fixes ({@link #fillMissing}).
 *
 * @param attnTpSize attention TP size
 * @param attnCpSize attention CP size (1 in SGLang's older protocol, which has no CP)
 * @param dpSize DP size
 * @param ppSize pipeline size
 * @param pageSize KV page size in tokens
 * @param kvCacheDtype KV cache dtype, {@code null} when the prefill did not say
 * @param followBootstrapRoom whether the prefill picks its DP rank from the bootstrap room
 * @param enableDsaCacheLayerSplit whether DSA cache layers are split across CP ranks (decode then pulls from all)
 * @param prefillHttpPort the prefill's HTTP API port, {@code null} when the prefill did not say
 * @param passedThrough fields this server does not know, answered unchanged, in registration order (never
 *        {@code null})
 */
public record PrefillTopology(int attnTpSize, int attnCpSize, int dpSize, int ppSize, int pageSize,
		String kvCacheDtype, boolean followBootstrapRoom, boolean enableDsaCacheLayerSplit, Integer prefillHttpPort,
		Map<String, JsonNode> passedThrough) {

	/** SGLang's decode-side scratch fields of its {@code PrefillServerInfo}: always {@code null} on the wire. */
	private static final List<String> SCRATCH_FIELDS = List.of("target_tp_rank", "target_tp_ranks",
			"target_cp_ranks", "target_pp_ranks", "required_dst_info_num", "required_prefill_response_num");

	/** Every field of today's parallel-info answer but the passed-through ones: a registration cannot set them. */
	public static final Set<String> ANSWER_FIELDS = Stream.concat(Stream.of("attn_tp_size", "attn_cp_size",
			"dp_size", "pp_size", "page_size", "kv_cache_dtype", "follow_bootstrap_room",
			"enable_dsa_cache_layer_split", "prefill_http_port"), SCRATCH_FIELDS.stream())
			.collect(Collectors.toUnmodifiableSet());

	public PrefillTopology {
		passedThrough = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(passedThrough,
				"passedThrough")));
	}

	/**
	 * Reads back what {@link #toJson()} wrote (a shared store keeps the instance's fields that way).
	 *
	 * @param json a stored parallel-info answer
	 * @return the fields it holds; unknown fields are passed through again
	 * @throws RequestException when a size is missing or not an integer
	 */
	public static PrefillTopology fromJson(JsonNode json) {
		Map<String, JsonNode> passedThrough = new LinkedHashMap<>();
		json.properties().forEach(field -> {
			if (!ANSWER_FIELDS.contains(field.getKey())) {
				passedThrough.put(field.getKey(), field.getValue());
			}
		});
		return new PrefillTopology(Json.requiredInt(json, "attn_tp_size"), Json.requiredInt(json, "attn_cp_size"),
				Json.requiredInt(json, "dp_size"), Json.requiredInt(json, "pp_size"),
				Json.requiredInt(json, "page_size"), Json.optionalString(json, "kv_cache_dtype"),
				Json.optionalBoolean(json, "follow_bootstrap_room", false),
				Json.optionalBoolean(json, "enable_dsa_cache_layer_split", false),
				Json.optionalIntOrIntText(json, "prefill_http_port"), passedThrough);
	}

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

	/**
	 * Takes a later registration's {@code kv_cache_dtype} and {@code prefill_http_port} where this one has none, as
	 * SGLang's server does; every other field stays as the first registration fixed it.
	 *
	 * @param later a later registration's fields
	 * @return this, or a copy with the missing values filled
	 */
	public PrefillTopology fillMissing(PrefillTopology later) {
		String dtype = kvCacheDtype != null ? kvCacheDtype : later.kvCacheDtype;
		Integer httpPort = prefillHttpPort != null ? prefillHttpPort : later.prefillHttpPort;
		if (Objects.equals(dtype, kvCacheDtype) && Objects.equals(httpPort, prefillHttpPort)) {
			return this;
		}
		return new PrefillTopology(attnTpSize, attnCpSize, dpSize, ppSize, pageSize, dtype, followBootstrapRoom,
				enableDsaCacheLayerSplit, httpPort, passedThrough);
	}

	/** @return the older protocol's parallel-info answer ({@code GET /route} with engine_rank, target_dp_group, pp all −1) */
	public Map<String, Object> toLegacyJson() {
		Map<String, Object> json = new LinkedHashMap<>();
		json.put("prefill_attn_tp_size", attnTpSize);
		json.put("prefill_dp_size", dpSize);
		json.put("prefill_pp_size", ppSize);
		json.put("prefill_page_size", pageSize);
		return json;
	}

	/**
	 * @return today's SGLang parallel-info answer: its {@code PrefillServerInfo} with every field in its order, the
	 *         decode-side scratch fields null, and the passed-through fields after SGLang's instance fields. SGLang's
	 *         decode rejects a missing or unknown key, so nothing else goes in.
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
		json.put("enable_dsa_cache_layer_split", enableDsaCacheLayerSplit);
		json.put("prefill_http_port", prefillHttpPort);
		json.putAll(passedThrough);
		SCRATCH_FIELDS.forEach(field -> json.put(field, null));
		return json;
	}

	@Override
	public String toString() {
		return "dp=" + dpSize + " cp=" + attnCpSize + " tp=" + attnTpSize + " pp=" + ppSize + " page_size=" + pageSize
				+ (kvCacheDtype == null ? "" : " kv_cache_dtype=" + kvCacheDtype)
				+ (enableDsaCacheLayerSplit ? " dsa_cache_layer_split" : "")
				+ (passedThrough.isEmpty() ? "" : " passed through: " + passedThrough.keySet());
	}
}
