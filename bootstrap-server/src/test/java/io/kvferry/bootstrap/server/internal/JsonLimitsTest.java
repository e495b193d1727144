package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The shared mapper's parsing limits: documents beyond them are refused as malformed JSON (400) while parsed, documents
 * at them are read; Python's leniencies that SGLang never relies on (NaN) stay off, its duplicate-key rule is kept.
 */
class JsonLimitsTest {

	@Test
	void theSharedMapperUsesTheSafeLimits() {
		StreamReadConstraints limits = Json.MAPPER.getFactory().streamReadConstraints();
		assertThat(limits.getMaxNestingDepth()).isEqualTo(Json.MAX_NESTING_DEPTH).isEqualTo(32);
		assertThat(limits.getMaxNumberLength()).isEqualTo(Json.MAX_NUMBER_LENGTH).isEqualTo(64);
		assertThat(limits.getMaxStringLength()).isEqualTo(Json.MAX_STRING_LENGTH).isEqualTo(16 * 1024);
		assertThat(limits.getMaxNameLength()).isEqualTo(Json.MAX_NAME_LENGTH).isEqualTo(256);
		assertThat(limits.getMaxTokenCount()).isEqualTo(Json.MAX_TOKEN_COUNT).isEqualTo(100_000);
		// Stricter than Jackson's own defaults on every count.
		assertThat(limits.getMaxNestingDepth()).isLessThan(StreamReadConstraints.DEFAULT_MAX_DEPTH);
		assertThat(limits.getMaxNumberLength()).isLessThan(StreamReadConstraints.DEFAULT_MAX_NUM_LEN);
		assertThat(limits.getMaxStringLength()).isLessThan(StreamReadConstraints.DEFAULT_MAX_STRING_LEN);
		assertThat(limits.getMaxNameLength()).isLessThan(StreamReadConstraints.DEFAULT_MAX_NAME_LEN);
	}

	@Test
	void readsNestingUpToTheLimit() {
		// The object is level 1, so 31 arrays inside it reach the limit exactly.
		String atLimit = "{\"a\": " + "[".repeat(Json.MAX_NESTING_DEPTH - 1) + "]".repeat(Json.MAX_NESTING_DEPTH - 1)
				+ "}";
		assertThat(Json.readObject(bytes(atLimit)).get("a").isArray()).isTrue();
	}

	@ParameterizedTest
	@ValueSource(ints = { Json.MAX_NESTING_DEPTH, 1000, 20_000 })
	void refusesNestingBeyondTheLimit(int arrays) {
		String deep = "{\"a\": " + "[".repeat(arrays) + "]".repeat(arrays) + "}";
		assertThatThrownBy(() -> Json.readObject(bytes(deep)))
				.isInstanceOf(RequestException.class)
				.hasMessageStartingWith("request body : malformed JSON (Document nesting depth")
				.satisfies(e -> assertThat(((RequestException) e).status()).isEqualTo(400));
		// Unclosed nesting fails the same way, before the end of the document.
		String unclosed = "{\"a\": " + "{\"b\": ".repeat(arrays);
		assertThatThrownBy(() -> Json.readObject(bytes(unclosed))).hasMessageContaining("nesting depth");
	}

	@Test
	void readsNumbersUpToTheLimitAndRefusesLongerOnes() {
		String longest = "1" + "0".repeat(Json.MAX_NUMBER_LENGTH - 1);
		JsonNode read = Json.readObject(bytes("{\"n\": " + longest + "}"));
		assertThat(read.get("n").bigIntegerValue().toString()).isEqualTo(longest);
		assertThatThrownBy(() -> Json.readObject(bytes("{\"n\": " + longest + "0}")))
				.hasMessageStartingWith("request body : malformed JSON (Number value length");
		assertThatThrownBy(() -> Json.readObject(bytes("{\"n\": 0." + "5".repeat(Json.MAX_NUMBER_LENGTH) + "}")))
				.hasMessageStartingWith("request body : malformed JSON (Number value length");
	}

	@Test
	void aHugeExponentIsReadAsAnInfiniteDoubleAndRefusedAsAnInteger() {
		JsonNode read = Json.readObject(bytes("{\"attn_tp_size\": 1e999999999}"));
		assertThat(read.get("attn_tp_size").isIntegralNumber()).isFalse();
		assertThatThrownBy(() -> Json.requiredInt(read, "attn_tp_size"))
				.hasMessage("attn_tp_size : \"Infinity\" (expected: an integer)");
		assertThatThrownBy(() -> Json.requiredNonNegativeLong(read, "attn_tp_size"))
				.hasMessageStartingWith("attn_tp_size : ");
	}

	@Test
	void refusesStringsAndNamesBeyondTheLimits() {
		String longest = "x".repeat(Json.MAX_STRING_LENGTH);
		assertThat(Json.readObject(bytes("{\"s\": \"" + longest + "\"}")).get("s").textValue()).hasSize(
				Json.MAX_STRING_LENGTH);
		assertThatThrownBy(() -> Json.readObject(bytes("{\"s\": \"" + longest + "x\"}")))
				.hasMessageStartingWith("request body : malformed JSON (String value length");
		String name = "k".repeat(Json.MAX_NAME_LENGTH);
		assertThat(Json.readObject(bytes("{\"" + name + "\": 1}")).has(name)).isTrue();
		assertThatThrownBy(() -> Json.readObject(bytes("{\"" + name + "k\": 1}")))
				.hasMessageStartingWith("request body : malformed JSON (Name length");
	}

	@Test
	void refusesDocumentsWithTooManyTokens() {
		StringBuilder rooms = new StringBuilder("{\"bootstrap_rooms\": [");
		for (long i = 0; i < Json.MAX_TOKEN_COUNT; i++) {
			rooms.append(i == 0 ? "0" : ",0");
		}
		String document = rooms.append("]}").toString();
		assertThatThrownBy(() -> Json.readObject(bytes(document)))
				.hasMessageStartingWith("request body : malformed JSON (Token count");
	}

	@ParameterizedTest
	@ValueSource(strings = { "{\"a\": NaN}", "{\"a\": Infinity}", "{\"a\": -Infinity}", "{'a': 1}", "{a: 1}",
			"{\"a\": 01}", "{\"a\": 1,}", "{\"a\": \"\u0001\"}", "{\"a\": \"\\x\"}", "// c\n{}" })
	void refusesWhatStrictJsonRefuses(String body) {
		assertThatThrownBy(() -> Json.readObject(bytes(body)))
				.isInstanceOf(RequestException.class)
				.hasMessageStartingWith("request body : malformed JSON (");
	}

	@Test
	void refusesInvalidUtf8() {
		byte[] body = { '{', '"', 'a', '"', ':', ' ', '"', (byte) 0xC3, '(', '"', '}' };
		assertThatThrownBy(() -> Json.readObject(body)).hasMessageStartingWith("request body : malformed JSON (");
	}

	@Test
	void keepsTheLastOfDuplicatedKeysAsPythonDoes() {
		JsonNode read = Json.readObject(bytes("{\"dp_rank\": 1, \"dp_rank\": \"x\", \"dp_rank\": 3}"));
		assertThat(Json.requiredInt(read, "dp_rank")).isEqualTo(3);
	}

	@Test
	void acceptsUnicodeAndEscapesInStrings() {
		JsonNode read = Json.readObject(bytes("{\"s\": \"\u00e9\\u4e2d\\ud83d\\ude00\\ud800\"}"));
		assertThat(read.get("s").textValue()).isEqualTo("\u00e9\u4e2d\ud83d\ude00\ud800");
		// Written back escaped, as Python's ensure_ascii does.
		assertThat(new String(Json.write(read.get("s").textValue()), StandardCharsets.US_ASCII))
				.isEqualTo("\"\\u00e9\\u4e2d\\ud83d\\ude00\\ud800\"");
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}
}
