package io.kvferry.bootstrap.client;

import java.io.IOException;
import java.io.UncheckedIOException;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import org.jspecify.annotations.Nullable;

/**
 * SGLang's bootstrap JSON: the {@code PUT /route} body and the two {@code GET /route} answers, with the field names
 * and the registration encoder of {@link BootstrapFields}. Unknown fields in an answer are ignored, so a newer server
 * that adds fields keeps working (SGLang's decode side fails on them). Stateless and thread-safe; works on byte arrays
 * already copied out of Netty buffers, so no buffer is held here.
 */
final class BootstrapCodec {

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
		try {
			return MAPPER.writeValueAsBytes(BootstrapFields.registration(registration));
		}
		catch (JsonProcessingException e) {
			// A map of strings, ints and booleans always serializes; this only guards Jackson's checked signature.
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
		int tpSize = intField(call, root, BootstrapFields.PREFILL_ATTN_TP_SIZE);
		int dpSize = intField(call, root, BootstrapFields.PREFILL_DP_SIZE);
		int ppSize = intField(call, root, BootstrapFields.PREFILL_PP_SIZE);
		int pageSize = intField(call, root, BootstrapFields.PREFILL_PAGE_SIZE);
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
		JsonNode ip = root.get(BootstrapFields.RANK_IP);
		if (ip == null || ip.isNull()) {
			throw missing(call, BootstrapFields.RANK_IP);
		}
		if (!ip.isTextual() || ip.textValue().isBlank()) {
			throw new BootstrapException(Kind.OTHER, 200,
					call + ": '" + BootstrapFields.RANK_IP + "' is not a host: " + abbreviate(ip.toString()));
		}
		int port = intField(call, root, BootstrapFields.RANK_PORT);
		if (port < 1 || port > 65535) {
			throw new BootstrapException(Kind.OTHER, 200,
					call + ": '" + BootstrapFields.RANK_PORT + "' : " + port + " (expected: 1..65535)");
		}
		try {
			return new HostPort(ip.textValue().strip(), port);
		}
		catch (IllegalArgumentException e) {
			throw new BootstrapException(Kind.OTHER, 200, call + ": invalid '" + BootstrapFields.RANK_IP + "': "
					+ e.getMessage(), e);
		}
	}

	/**
	 * @param call method and URL, for messages
	 * @param body a 200 answer to a rank look-up
	 * @return {@code rank_ip:rank_port}, the rank's {@code kvferry_incarnation} (unknown when absent or null) and its
	 *         {@code kvferry_more_endpoints} (none when absent or null)
	 * @throws BootstrapException OTHER naming the field when one is missing, null, mistyped or out of range
	 */
	static RankRoute decodeRankRoute(String call, byte[] body) {
		HostPort endpoint = decodeRankEndpoint(call, body);
		JsonNode root = parseObject(call, body);
		try {
			return new RankRoute(endpoint,
					BootstrapFields.parseIncarnation(optionalText(call, root, BootstrapFields.INCARNATION)),
					BootstrapFields.parseEndpoints(optionalText(call, root, BootstrapFields.MORE_ENDPOINTS)));
		}
		catch (IllegalArgumentException e) {
			throw new BootstrapException(Kind.OTHER, 200, call + ": invalid answer: " + e.getMessage(), e);
		}
	}

	/** @return the field's text, or null when it is absent or null */
	private static @Nullable String optionalText(String call, JsonNode root, String name) {
		JsonNode value = root.get(name);
		if (value == null || value.isNull()) {
			return null;
		}
		if (!value.isTextual()) {
			throw new BootstrapException(Kind.OTHER, 200, call + ": '" + name + "' is not a text: "
					+ abbreviate(value.toString()));
		}
		return value.textValue();
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
