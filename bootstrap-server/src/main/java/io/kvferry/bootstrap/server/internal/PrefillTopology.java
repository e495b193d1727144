package io.kvferry.bootstrap.server.internal;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillSizes;

/**
 * A prefill instance's instance-level fields, as its registrations declare them and as SGLang's server keeps them:
 * each is fixed by the first registration (the sizes by the rule of {@link PrefillSizes}), except
 * {@code kv_cache_dtype} and {@code prefill_http_port}, which the first registration that carries a value fixes
 * ({@link #fillMissing}). Field names are {@link BootstrapFields}'.
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

	/** Every field of today's parallel-info answer but the passed-through ones: a registration cannot set them. */
	public static final Set<String> ANSWER_FIELDS = Stream.concat(BootstrapFields.PARALLEL_INFO.stream(),
			BootstrapFields.PARALLEL_INFO_SCRATCH.stream()).collect(Collectors.toUnmodifiableSet());

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
		return new PrefillTopology(Json.requiredInt(json, BootstrapFields.ATTN_TP_SIZE),
				Json.requiredInt(json, BootstrapFields.ATTN_CP_SIZE), Json.requiredInt(json, BootstrapFields.DP_SIZE),
				Json.requiredInt(json, BootstrapFields.PP_SIZE), Json.requiredInt(json, BootstrapFields.PAGE_SIZE),
				Json.optionalString(json, BootstrapFields.KV_CACHE_DTYPE),
				Json.optionalBoolean(json, BootstrapFields.FOLLOW_BOOTSTRAP_ROOM, false),
				Json.optionalBoolean(json, BootstrapFields.ENABLE_DSA_CACHE_LAYER_SPLIT, false),
				Json.optionalIntOrIntText(json, BootstrapFields.PREFILL_HTTP_PORT), passedThrough);
	}

	/** @return the sizes the first registration fixed, which the rule of {@link PrefillSizes} keeps */
	public PrefillSizes sizes() {
		return new PrefillSizes(attnTpSize, attnCpSize, dpSize, ppSize, pageSize);
	}

	/** @return dp × cp × tp × pp: how many distinct ranks make the instance complete */
	public long totalRanks() {
		return sizes().totalRanks();
	}

	/**
	 * @param other another registration's sizes
	 * @return whether both describe the same parallel shape and page size
	 */
	public boolean sameShape(PrefillTopology other) {
		return sizes().equals(other.sizes());
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
		return BootstrapFields.legacyParallelInfo(sizes());
	}

	/**
	 * @return today's SGLang parallel-info answer: its {@code PrefillServerInfo} with every field in its order, the
	 *         decode-side scratch fields null, and the passed-through fields after SGLang's instance fields. SGLang's
	 *         decode rejects a missing or unknown key, so nothing else goes in.
	 */
	public Map<String, Object> toJson() {
		Map<String, Object> json = new LinkedHashMap<>();
		json.put(BootstrapFields.ATTN_TP_SIZE, attnTpSize);
		json.put(BootstrapFields.ATTN_CP_SIZE, attnCpSize);
		json.put(BootstrapFields.DP_SIZE, dpSize);
		json.put(BootstrapFields.PP_SIZE, ppSize);
		json.put(BootstrapFields.PAGE_SIZE, pageSize);
		json.put(BootstrapFields.KV_CACHE_DTYPE, kvCacheDtype);
		json.put(BootstrapFields.FOLLOW_BOOTSTRAP_ROOM, followBootstrapRoom);
		json.put(BootstrapFields.ENABLE_DSA_CACHE_LAYER_SPLIT, enableDsaCacheLayerSplit);
		json.put(BootstrapFields.PREFILL_HTTP_PORT, prefillHttpPort);
		json.putAll(passedThrough);
		BootstrapFields.PARALLEL_INFO_SCRATCH.forEach(field -> json.put(field, null));
		return json;
	}

	@Override
	public String toString() {
		return sizes() + (kvCacheDtype == null ? "" : " kv_cache_dtype=" + kvCacheDtype)
				+ (enableDsaCacheLayerSplit ? " dsa_cache_layer_split" : "")
				+ (passedThrough.isEmpty() ? "" : " passed through: " + passedThrough.keySet());
	}
}
