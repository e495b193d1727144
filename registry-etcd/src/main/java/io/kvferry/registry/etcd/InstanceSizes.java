package io.kvferry.registry.etcd;

import java.io.IOException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.bootstrap.PrefillParallelInfo;

/**
 * An instance's sizes as stored under its {@code info} key, in SGLang's field names. Other fields in the stored JSON
 * (a bootstrap server keeps every field of SGLang's parallel-info answer there) are ignored when read.
 *
 * @param attnTpSize attention TP size
 * @param attnCpSize attention CP size
 * @param dpSize DP size
 * @param ppSize PP size
 * @param pageSize page size in tokens
 */
record InstanceSizes(int attnTpSize, int attnCpSize, int dpSize, int ppSize, int pageSize) {

	static final ObjectMapper JSON = new ObjectMapper();

	/** @return how many distinct ranks make the instance complete */
	long totalRanks() {
		return (long) attnTpSize * attnCpSize * dpSize * ppSize;
	}

	PrefillParallelInfo toParallelInfo() {
		return new PrefillParallelInfo(attnTpSize, dpSize, ppSize, pageSize);
	}

	byte[] toJson() {
		ObjectNode node = JSON.createObjectNode().put("attn_tp_size", attnTpSize).put("attn_cp_size", attnCpSize)
				.put("dp_size", dpSize).put("pp_size", ppSize).put("page_size", pageSize);
		return node.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
	}

	/**
	 * @param json a stored {@code info} value
	 * @return its sizes
	 * @throws IllegalArgumentException naming the field when one is missing or not a positive integer
	 */
	static InstanceSizes fromJson(byte[] json) {
		JsonNode node;
		try {
			node = JSON.readTree(json);
		}
		catch (IOException e) {
			throw new IllegalArgumentException("instance info is not JSON: " + e.getMessage(), e);
		}
		return new InstanceSizes(size(node, "attn_tp_size"), node.has("attn_cp_size") ? size(node, "attn_cp_size") : 1,
				size(node, "dp_size"), size(node, "pp_size"), size(node, "page_size"));
	}

	private static int size(JsonNode node, String field) {
		JsonNode value = node == null ? null : node.get(field);
		if (value == null || !value.canConvertToInt() || !value.isIntegralNumber() || value.intValue() < 1) {
			throw new IllegalArgumentException("instance info field " + field + " : " + value
					+ " (expected: an integer >= 1)");
		}
		return value.intValue();
	}

	@Override
	public String toString() {
		return "dp=" + dpSize + " cp=" + attnCpSize + " tp=" + attnTpSize + " pp=" + ppSize + " page_size=" + pageSize;
	}
}
