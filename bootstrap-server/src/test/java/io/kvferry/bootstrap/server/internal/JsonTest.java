package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JsonTest {

	@Test
	void writesLikePythonsJsonDumps() {
		Map<String, Object> value = new LinkedHashMap<>();
		value.put("a", 1);
		value.put("b", "x\u00e9");
		value.put("c", null);
		value.put("d", true);
		value.put("e", Arrays.asList(1, 2));
		value.put("f", Map.of());
		assertThat(new String(Json.write(value), StandardCharsets.US_ASCII))
				.isEqualTo("{\"a\": 1, \"b\": \"x\\u00e9\", \"c\": null, \"d\": true, \"e\": [1, 2], \"f\": {}}");
	}

	@Test
	void readsOneObjectAndIgnoresNothingSilently() {
		assertThat(Json.readObject(bytes("{\"a\": 1, \"unknown\": [1]}")).get("a").intValue()).isEqualTo(1);
		assertThatThrownBy(() -> Json.readObject(bytes("")))
				.hasMessage("request body : empty (expected: a JSON object)");
		assertThatThrownBy(() -> Json.readObject(bytes("  "))).hasMessageStartingWith("request body : ");
		assertThatThrownBy(() -> Json.readObject(bytes("[]")))
				.hasMessage("request body : a JSON array (expected: a JSON object)");
		assertThatThrownBy(() -> Json.readObject(bytes("{\"a\": 1} x")))
				.hasMessageStartingWith("request body : malformed");
		assertThatThrownBy(() -> Json.readObject(bytes("{\"a\": ")))
				.hasMessageStartingWith("request body : malformed JSON");
	}

	@Test
	void readsIntegersStrictlyAndIntegerStringsOnlyWhereAsked() {
		var object = Json.readObject(bytes("{\"i\": 5, \"s\": \" 7 \", \"f\": 1.0, \"b\": false, "
				+ "\"big\": 4294967296}"));
		assertThat(Json.requiredInt(object, "i")).isEqualTo(5);
		assertThat(Json.requiredIntOrIntText(object, "s")).isEqualTo(7);
		assertThatThrownBy(() -> Json.requiredInt(object, "s")).hasMessage("s : \" 7 \" (expected: an integer)");
		assertThatThrownBy(() -> Json.requiredInt(object, "f")).hasMessage("f : 1.0 (expected: an integer)");
		assertThatThrownBy(() -> Json.requiredInt(object, "b")).hasMessage("b : false (expected: an integer)");
		assertThatThrownBy(() -> Json.requiredInt(object, "big")).hasMessageStartingWith("big : 4294967296");
		assertThat(Json.optionalInt(object, "none", 9)).isEqualTo(9);
		assertThat(Json.optionalString(object, "none")).isNull();
	}

	@Test
	void shortensLongValuesInMessages() {
		var object = Json.readObject(bytes("{\"s\": \"" + "y".repeat(500) + "\"}"));
		assertThatThrownBy(() -> Json.requiredInt(object, "s"))
				.satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(100));
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}
}
