package io.kvferry.bootstrap.client;

import java.io.IOException;
import java.io.UncheckedIOException;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;

/**
 * SGLang's bootstrap JSON: the {@code PUT /route} body and the two {@code GET /route} answers. Unknown fields in an
 * answer are ignored, so a newer server that adds fields keeps working (SGLang's decode side fails on them). Stateless
 * and thread-safe; works on byte arrays already copied out of Netty buffers, so no buffer is held here.
 */
final class BootstrapCodec {

	/** Parallel-info answer fields (SGLang's {@code engine_rank=-1} protocol). */
	static final String PREFILL_ATTN_TP_SIZE = "prefill_attn_tp_size";
	static final String PREFILL_DP_SIZE = "prefill_dp_size";
	static final String PREFILL_PP_SIZE = "prefill_pp_size";
	static final String PREFILL_PAGE_SIZE = "prefill_page_size";

	/** Rank look-up answer fields. */
	static final String RANK_IP = "rank_ip";
	static final String RANK_PORT = "rank_port";

	private static final ObjectMapper MAPPER = JsonMapper.builder()
			.disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
			.build();

	private BootstrapCodec() {
	}

	/**
	 * @param registration what a prefill rank publishes
	 * @return the {@code PUT /route} body with SGLang's field names, UTF-8
	 */
	static byte[] encodeRegistration(PrefillRegistration registration) {
		ParallelLayout layout = registration.layout();
		ObjectNode body = MAPPER.createObjectNode()
				.put("role", registration.role())
				.put("attn_tp_size", layout.attnTpSize())
				.put("attn_tp_rank", layout.attnTpRank())
				.put("attn_dp_size", layout.attnDpSize())
				.put("attn_dp_rank", layout.attnDpRank())
				.put("pp_size", layout.ppSize())
				.put("pp_rank", layout.ppRank())
				.put("system_dp_size", layout.systemDpSize())
				.put("system_dp_rank", layout.systemDpRank())
				.put(RANK_IP, registration.rankIp())
				.put(RANK_PORT, registration.rankPort())
				.put("page_size", registration.pageSize());
		// Only when they say something: bodies without CP stay byte-identical to what older servers were sent.
		if (layout.attnCpSize() > 1) {
			body.put("attn_cp_size", layout.attnCpSize()).put("attn_cp_rank", layout.attnCpRank());
		}
		if (registration.dsaCacheLayerSplit()) {
			body.put("enable_dsa_cache_layer_split", true);
		}
		if (registration.allCpRanksTransfer()) {
			body.put(PrefillRegistration.ALL_CP_RANKS_FIELD, true);
		}
		try {
			return MAPPER.writeValueAsBytes(body);
		}
		catch (JsonProcessingException e) {
			// A tree of strings and ints always serializes; this only guards Jackson's checked signature.
			throw new UncheckedIOException(e);
		}
	}

	/**
	 * @param call method and URL, for messages
	 * @param body a 200 answer to {@code GET /route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1}
	 * @return the prefill instance's sizes
	 * @throws BootstrapException OTHER naming the field when one is missing, null, not an integer or out of range
	 */
	static PrefillParallelInfo decodeParallelInfo(String call, byte[] body) {
		JsonNode root = parseObject(call, body);
		int tpSize = intField(call, root, PREFILL_ATTN_TP_SIZE);
		int dpSize = intField(call, root, PREFILL_DP_SIZE);
		int ppSize = intField(call, root, PREFILL_PP_SIZE);
		int pageSize = intField(call, root, PREFILL_PAGE_SIZE);
		try {
			return new PrefillParallelInfo(tpSize, dpSize, ppSize, pageSize);
		}
		catch (IllegalArgumentException e) {
			throw new BootstrapException(Kind.OTHER, 200, call + ": invalid answer: " + e.getMessage(), e);
		}
	}

	/**
	 * @param call method and URL, for messages
	 * @param body a 200 answer to a rank look-up
	 * @return {@code rank_ip:rank_port}
	 * @throws BootstrapException OTHER naming the field when one is missing, null, mistyped or out of range
	 */
	static HostPort decodeRankEndpoint(String call, byte[] body) {
		JsonNode root = parseObject(call, body);
		JsonNode ip = root.get(RANK_IP);
		if (ip == null || ip.isNull()) {
			throw missing(call, RANK_IP);
		}
		if (!ip.isTextual() || ip.textValue().isBlank()) {
			throw new BootstrapException(Kind.OTHER, 200,
					call + ": '" + RANK_IP + "' is not a host: " + abbreviate(ip.toString()));
		}
		int port = intField(call, root, RANK_PORT);
		if (port < 1 || port > 65535) {
			throw new BootstrapException(Kind.OTHER, 200,
					call + ": '" + RANK_PORT + "' : " + port + " (expected: 1..65535)");
		}
		try {
			return new HostPort(ip.textValue().strip(), port);
		}
		catch (IllegalArgumentException e) {
			throw new BootstrapException(Kind.OTHER, 200, call + ": invalid '" + RANK_IP + "': " + e.getMessage(), e);
		}
	}

	private static JsonNode parseObject(String call, byte[] body) {
		JsonNode root;
		try {
			root = MAPPER.readTree(body);
		}
		catch (IOException e) {
			String why = e instanceof JsonProcessingException json ? json.getOriginalMessage() : e.getMessage();
			throw new BootstrapException(Kind.OTHER, 200,
					call + ": answer is not JSON: " + abbreviate(String.valueOf(why)), e);
		}
		if (root == null || !root.isObject()) {
			throw new BootstrapException(Kind.OTHER, 200, call + ": answer is not a JSON object: "
					+ BootstrapErrors.quote(body));
		}
		return root;
	}

	private static int intField(String call, JsonNode root, String name) {
		JsonNode value = root.get(name);
		if (value == null || value.isNull()) {
			throw missing(call, name);
		}
		if (!value.isIntegralNumber() || !value.canConvertToInt()) {
			throw new BootstrapException(Kind.OTHER, 200,
					call + ": '" + name + "' is not an integer: " + abbreviate(value.toString()));
		}
		return value.intValue();
	}

	private static BootstrapException missing(String call, String name) {
		return new BootstrapException(Kind.OTHER, 200, call + ": answer has no '" + name + "' (missing or null)");
	}

	private static String abbreviate(String text) {
		return text.length() <= 80 ? text : text.substring(0, 80) + "...";
	}
}
