package io.kvferry.registry.etcd;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.etcd.jetcd.KeyValue;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.bootstrap.PrefillSizes;
import io.kvferry.bootstrap.RankRoute;
import org.jspecify.annotations.Nullable;

/**
 * The registry's values, with the field names of {@link BootstrapFields}: an instance's sizes under its {@code info}
 * key, a rank's endpoint under its rank key. Other fields of a stored {@code info} value (a bootstrap server keeps
 * every field of SGLang's parallel-info answer there) are ignored when read. Stateless and thread-safe.
 */
final class RegistryCodec {

	private static final ObjectMapper JSON = new ObjectMapper();

	private RegistryCodec() {
	}

	/** @return the sizes as an {@code info} value: compact JSON of {@link BootstrapFields#SIZES} */
	static byte[] sizesJson(PrefillSizes sizes) {
		return write(BootstrapFields.sizes(sizes));
	}

	/**
	 * @param json a stored {@code info} value
	 * @return its sizes ({@code attn_cp_size} is 1 when absent, as values written before CP had none)
	 * @throws IllegalArgumentException naming the field when one is missing or not a positive integer
	 */
	static PrefillSizes readSizes(byte[] json) {
		JsonNode node;
		try {
			node = JSON.readTree(json);
		}
		catch (IOException e) {
			throw new IllegalArgumentException("instance info is not JSON: " + e.getMessage(), e);
		}
		return new PrefillSizes(size(node, BootstrapFields.ATTN_TP_SIZE),
				node != null && node.has(BootstrapFields.ATTN_CP_SIZE) ? size(node, BootstrapFields.ATTN_CP_SIZE) : 1,
				size(node, BootstrapFields.DP_SIZE), size(node, BootstrapFields.PP_SIZE),
				size(node, BootstrapFields.PAGE_SIZE));
	}

	/**
	 * @param call what was asked, for the message
	 * @param kv a stored {@code info} key
	 * @return its sizes
	 * @throws BootstrapException {@code OTHER} naming the key when its value is unreadable
	 */
	static PrefillSizes readSizes(String call, KeyValue kv) {
		try {
			return readSizes(kv.getValue().getBytes());
		}
		catch (IllegalArgumentException e) {
			throw unreadable(call, kv, e);
		}
	}

	/** @return whether two {@code info} values hold the same sizes (the same bytes, when either is unreadable) */
	static boolean sameSizes(byte[] before, byte[] after) {
		try {
			return readSizes(before).equals(readSizes(after));
		}
		catch (IllegalArgumentException e) {
			return java.util.Arrays.equals(before, after);
		}
	}

	/** @return a rank's value: compact JSON of {@link BootstrapFields#ENDPOINT} */
	static byte[] endpointJson(String rankIp, int rankPort) {
		return write(BootstrapFields.endpoint(rankIp, rankPort));
	}

	/** @return a rank's value with its incarnation, left out when unknown */
	static byte[] endpointJson(String rankIp, int rankPort, long incarnation) {
		return write(BootstrapFields.endpoint(rankIp, rankPort, incarnation));
	}

	/** @return a rank's value with its incarnation and its further endpoints, each left out when there is none */
	static byte[] endpointJson(String rankIp, int rankPort, long incarnation, List<HostPort> moreEndpoints) {
		return write(BootstrapFields.endpoint(rankIp, rankPort, incarnation, moreEndpoints));
	}

	/**
	 * @param call what was asked, for the message
	 * @param kv a stored rank key
	 * @return the rank's endpoint, incarnation (unknown when the value has none) and further endpoints (none when it has
	 *         none)
	 * @throws BootstrapException {@code OTHER} naming the key when its value is unreadable
	 */
	static RankRoute readRoute(String call, KeyValue kv) {
		try {
			return readRoute(kv.getValue().getBytes());
		}
		catch (IllegalArgumentException e) {
			throw unreadable(call, kv, e);
		}
	}

	/**
	 * @param json a stored rank value
	 * @return the rank's endpoint, incarnation (unknown when the value has none) and further endpoints (none when it has
	 *         none)
	 * @throws IllegalArgumentException when the endpoint, the incarnation or the further endpoints are malformed
	 */
	static RankRoute readRoute(byte[] json) {
		HostPort endpoint = readEndpoint(json);
		JsonNode node;
		try {
			node = JSON.readTree(json);
		}
		catch (IOException e) {
			throw new IllegalArgumentException(e.getMessage(), e);
		}
		return new RankRoute(endpoint,
				BootstrapFields.parseIncarnation(optionalText(node, BootstrapFields.INCARNATION)),
				BootstrapFields.parseEndpoints(optionalText(node, BootstrapFields.MORE_ENDPOINTS)));
	}

	/** @return the field's text, or null when it is absent or null */
	private static @Nullable String optionalText(JsonNode node, String field) {
		JsonNode value = node.get(field);
		if (value == null || value.isNull()) {
			return null;
		}
		if (!value.isTextual()) {
			throw new IllegalArgumentException(field + " : " + value + " (expected: text)");
		}
		return value.textValue();
	}

	/**
	 * @param call what was asked, for the message
	 * @param kv a stored rank key
	 * @return the rank's endpoint
	 * @throws BootstrapException {@code OTHER} naming the key when its value is unreadable
	 */
	static HostPort readEndpoint(String call, KeyValue kv) {
		try {
			return readEndpoint(kv.getValue().getBytes());
		}
		catch (IllegalArgumentException e) {
			throw unreadable(call, kv, e);
		}
	}

	/**
	 * @param json a stored rank value
	 * @return the rank's endpoint
	 * @throws IllegalArgumentException when it is not {@code {"rank_ip": text, "rank_port": integer}}
	 */
	static HostPort readEndpoint(byte[] json) {
		JsonNode node;
		try {
			node = JSON.readTree(json);
		}
		catch (IOException e) {
			throw new IllegalArgumentException(e.getMessage(), e);
		}
		JsonNode ip = node == null ? null : node.get(BootstrapFields.RANK_IP);
		JsonNode port = node == null ? null : node.get(BootstrapFields.RANK_PORT);
		if (ip == null || !ip.isTextual() || port == null || !port.canConvertToInt()) {
			throw new IllegalArgumentException("expected {\"" + BootstrapFields.RANK_IP + "\": text, \""
					+ BootstrapFields.RANK_PORT + "\": integer}");
		}
		return new HostPort(ip.textValue(), port.intValue());
	}

	private static BootstrapException unreadable(String call, KeyValue kv, IllegalArgumentException e) {
		return new BootstrapException(BootstrapException.Kind.OTHER, 0, call + ": unreadable value of "
				+ kv.getKey().toString(StandardCharsets.UTF_8) + ": " + e.getMessage(), e);
	}

	private static int size(@Nullable JsonNode node, String field) {
		JsonNode value = node == null ? null : node.get(field);
		if (value == null || !value.canConvertToInt() || !value.isIntegralNumber() || value.intValue() < 1) {
			throw new IllegalArgumentException("instance info field " + field + " : " + value
					+ " (expected: an integer >= 1)");
		}
		return value.intValue();
	}

	private static byte[] write(Object value) {
		try {
			return JSON.writeValueAsBytes(value);
		}
		catch (JsonProcessingException e) {
			// A map of strings and ints always serializes; this only guards Jackson's checked signature.
			throw new IllegalStateException(e);
		}
	}
}
