package io.kvferry.bootstrap.server.internal;

import java.io.IOException;
import java.math.BigInteger;
import java.util.Objects;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.PrettyPrinter;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The server's one shared, pre-configured {@link ObjectMapper} and the helpers that read request fields with messages
 * naming the field. Answers are written the way Python's {@code json.dumps} writes them ({@code {"a": 1, "b": 2}},
 * non-ASCII escaped in lower-case hex), so bodies match SGLang's byte for byte. Thread-safe; no method blocks.
 * <p>
 * Parsing is bounded beyond the request body limit by {@link #READ_CONSTRAINTS}: a request that nests too deep, carries
 * an over-long number, string or field name, or too many tokens is refused as malformed JSON (400) while it is parsed,
 * before any tree or big number is built. Duplicated keys keep the last value, as Python's {@code json.loads}.
 */
public final class Json {

	/** Deepest nesting accepted; requests are flat objects, an array of rooms is depth 2. */
	public static final int MAX_NESTING_DEPTH = 32;

	/** Longest number accepted, in characters; a 64-bit integer needs 20, a double at most 24. */
	public static final int MAX_NUMBER_LENGTH = 64;

	/** Longest string value accepted, in characters; a {@code rank_ip} is at most 255. */
	public static final int MAX_STRING_LENGTH = 16 * 1024;

	/** Longest field name accepted, in characters; SGLang's are under 40. */
	public static final int MAX_NAME_LENGTH = 256;

	/** Most tokens accepted in one document; bounds the work whatever body limit an operator configures. */
	public static final long MAX_TOKEN_COUNT = 100_000;

	/** The parsing limits of {@link #MAPPER}. */
	public static final StreamReadConstraints READ_CONSTRAINTS = StreamReadConstraints.builder()
			.maxNestingDepth(MAX_NESTING_DEPTH)
			.maxNumberLength(MAX_NUMBER_LENGTH)
			.maxStringLength(MAX_STRING_LENGTH)
			.maxNameLength(MAX_NAME_LENGTH)
			.maxTokenCount(MAX_TOKEN_COUNT)
			.build();

	/**
	 * Unknown fields are ignored, never fatal; trailing garbage after the document is rejected as Python does; parsing
	 * is bounded by {@link #READ_CONSTRAINTS}.
	 */
	public static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
					.streamReadConstraints(READ_CONSTRAINTS)
					.build())
			.disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
			.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
			.enable(JsonWriteFeature.ESCAPE_NON_ASCII)
			// Python writes \u00e9, not \u00E9.
			.disable(JsonWriteFeature.WRITE_HEX_UPPER_CASE)
			.build();

	private static final ObjectWriter WRITER = MAPPER.writer(new PythonStylePrinter());

	static {
		// Jackson builds and caches its readers and writers of a type on first use, under a lock: done here, once, so
		// that event loops serving their first requests at the same moment never wait on each other for it.
		try {
			java.util.Map<String, Object> sample = new java.util.LinkedHashMap<>();
			sample.put("tree", MAPPER.readTree("{\"i\": 1, \"s\": \"x\", \"n\": null, \"f\": 1.5, \"b\": true, "
					+ "\"l\": [1]}"));
			sample.put("list", java.util.List.of(1, 2L, "x", 1.5, true));
			sample.put("null", null);
			WRITER.writeValueAsBytes(sample);
		}
		catch (IOException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	// What Python's int() accepts from a string: optional blanks and sign around decimal digits.
	private static final Pattern INTEGER_TEXT = Pattern.compile("\\s*[+-]?\\d+\\s*");

	private static final int MAX_SHOWN_VALUE = 40;

	private Json() {
	}

	/** Loads this class, and with it Jackson's readers and writers of the types the server reads and writes. */
	public static void warmUp() {
		// The static initializer did the work.
	}

	/**
	 * Parses a request body that must hold one JSON object.
	 *
	 * @param body the raw body
	 * @return the object node
	 * @throws RequestException 400 when the body is empty, malformed or not an object
	 */
	public static JsonNode readObject(byte[] body) {
		Objects.requireNonNull(body, "body");
		if (body.length == 0) {
			throw RequestException.badRequest("request body : empty (expected: a JSON object)");
		}
		JsonNode node;
		try {
			node = MAPPER.readTree(body);
		}
		catch (IOException e) {
			throw RequestException.badRequest("request body : malformed JSON (" + firstLine(e) + ")");
		}
		if (node == null || node.isMissingNode()) {
			throw RequestException.badRequest("request body : empty (expected: a JSON object)");
		}
		if (!node.isObject()) {
			throw RequestException.badRequest("request body : a JSON " + node.getNodeType().name().toLowerCase()
					+ " (expected: a JSON object)");
		}
		return node;
	}

	/**
	 * Writes a value as Python's {@code json.dumps} would.
	 *
	 * @param value a map, list, record or scalar
	 * @return UTF-8 (in fact ASCII) JSON bytes
	 */
	public static byte[] write(Object value) {
		try {
			return WRITER.writeValueAsBytes(value);
		}
		catch (JsonProcessingException e) {
			// Only our own maps of strings and numbers are written: failing here is a bug, not bad input.
			throw new IllegalStateException("cannot serialize " + value.getClass().getName(), e);
		}
	}

	/**
	 * Reads a required JSON integer (not a float, boolean or string).
	 *
	 * @param object the request object
	 * @param field the field name
	 * @return the value
	 * @throws RequestException 400 naming the field when missing, null or not an int
	 */
	public static int requiredInt(JsonNode object, String field) {
		JsonNode node = object.get(field);
		if (node == null || node.isNull()) {
			throw missing(field, "an integer");
		}
		return intValue(field, node, false);
	}

	/**
	 * Reads a required integer that may also come as a decimal string ({@code "5000"}), as SGLang's {@code int(x)}
	 * accepted for {@code rank_port} and {@code page_size}.
	 *
	 * @param object the request object
	 * @param field the field name
	 * @return the value
	 * @throws RequestException 400 naming the field when missing or not an integer
	 */
	public static int requiredIntOrIntText(JsonNode object, String field) {
		JsonNode node = object.get(field);
		if (node == null || node.isNull()) {
			throw missing(field, "an integer");
		}
		return intValue(field, node, true);
	}

	/**
	 * Reads an optional JSON integer; absent and {@code null} give the default.
	 *
	 * @param object the request object
	 * @param field the field name
	 * @param defaultValue used when absent or null
	 * @return the value
	 * @throws RequestException 400 naming the field when present but not an int
	 */
	public static int optionalInt(JsonNode object, String field, int defaultValue) {
		JsonNode node = object.get(field);
		return node == null || node.isNull() ? defaultValue : intValue(field, node, false);
	}

	/**
	 * Reads an optional integer that may also come as a decimal string, as SGLang's {@code int(x)} accepts; absent and
	 * {@code null} give {@code null}.
	 *
	 * @param object the request object
	 * @param field the field name
	 * @return the value or {@code null}
	 * @throws RequestException 400 naming the field when present but not an integer
	 */
	public static Integer optionalIntOrIntText(JsonNode object, String field) {
		JsonNode node = object.get(field);
		return node == null || node.isNull() ? null : intValue(field, node, true);
	}

	/**
	 * Reads an optional JSON boolean; absent and {@code null} give the default.
	 *
	 * @param object the request object
	 * @param field the field name
	 * @param defaultValue used when absent or null
	 * @return the value
	 * @throws RequestException 400 naming the field when present but not {@code true} or {@code false}
	 */
	public static boolean optionalBoolean(JsonNode object, String field, boolean defaultValue) {
		JsonNode node = object.get(field);
		if (node == null || node.isNull()) {
			return defaultValue;
		}
		if (!node.isBoolean()) {
			throw mistyped(field, node, "true or false");
		}
		return node.booleanValue();
	}

	/**
	 * Reads a required non-negative 64-bit JSON integer.
	 *
	 * @param object the request object
	 * @param field the field name
	 * @return the value, 0..2^63-1
	 * @throws RequestException 400 naming the field when missing, not an integer or out of range
	 */
	public static long requiredNonNegativeLong(JsonNode object, String field) {
		JsonNode node = object.get(field);
		if (node == null || node.isNull()) {
			throw missing(field, "an integer");
		}
		return nonNegativeLong(field, node);
	}

	/**
	 * @param field the name to report (e.g. {@code bootstrap_rooms[3]})
	 * @param node the value
	 * @return the value, 0..2^63-1
	 * @throws RequestException 400 naming the field when not an integer in range
	 */
	public static long nonNegativeLong(String field, JsonNode node) {
		if (!node.isIntegralNumber()) {
			throw mistyped(field, node, "an integer");
		}
		BigInteger value = node.bigIntegerValue();
		if (value.signum() < 0 || value.bitLength() > 63) {
			throw RequestException.badRequest(field + " : " + shown(node) + " (expected: 0.." + Long.MAX_VALUE + ")");
		}
		return value.longValue();
	}

	/**
	 * Reads a required JSON string.
	 *
	 * @param object the request object
	 * @param field the field name
	 * @return the value
	 * @throws RequestException 400 naming the field when missing, null or not a string
	 */
	public static String requiredString(JsonNode object, String field) {
		JsonNode node = object.get(field);
		if (node == null || node.isNull()) {
			throw missing(field, "a string");
		}
		if (!node.isTextual()) {
			throw mistyped(field, node, "a string");
		}
		return node.textValue();
	}

	/**
	 * Reads an optional JSON string; absent and {@code null} give {@code null}.
	 *
	 * @param object the request object
	 * @param field the field name
	 * @return the value or {@code null}
	 * @throws RequestException 400 naming the field when present but not a string
	 */
	public static String optionalString(JsonNode object, String field) {
		JsonNode node = object.get(field);
		if (node == null || node.isNull()) {
			return null;
		}
		if (!node.isTextual()) {
			throw mistyped(field, node, "a string");
		}
		return node.textValue();
	}

	/**
	 * @param node any value
	 * @return its JSON text, cut short so that a huge value never ends up in a message or a log line
	 */
	public static String shown(JsonNode node) {
		String text = node.toString();
		return text.length() <= MAX_SHOWN_VALUE ? text : text.substring(0, MAX_SHOWN_VALUE) + "...";
	}

	private static int intValue(String field, JsonNode node, boolean allowText) {
		if (node.isIntegralNumber()) {
			if (!node.canConvertToInt()) {
				throw RequestException.badRequest(field + " : " + shown(node) + " (expected: an integer in "
						+ Integer.MIN_VALUE + ".." + Integer.MAX_VALUE + ")");
			}
			return node.intValue();
		}
		if (allowText && node.isTextual() && INTEGER_TEXT.matcher(node.textValue()).matches()) {
			try {
				return Integer.parseInt(node.textValue().trim());
			}
			catch (NumberFormatException e) {
				throw RequestException.badRequest(field + " : " + shown(node) + " (expected: an integer in "
						+ Integer.MIN_VALUE + ".." + Integer.MAX_VALUE + ")");
			}
		}
		throw mistyped(field, node, "an integer");
	}

	private static RequestException missing(String field, String expected) {
		return RequestException.badRequest(field + " : missing (expected: " + expected + ")");
	}

	private static RequestException mistyped(String field, JsonNode node, String expected) {
		return RequestException.badRequest(field + " : " + shown(node) + " (expected: " + expected + ")");
	}

	private static String firstLine(IOException e) {
		String message = e instanceof JsonProcessingException jpe ? jpe.getOriginalMessage() : e.getMessage();
		message = String.valueOf(message);
		int newline = message.indexOf('\n');
		String line = newline < 0 ? message : message.substring(0, newline);
		line = line.length() <= 120 ? line : line.substring(0, 120) + "...";
		if (e instanceof JsonProcessingException located && located.getLocation() != null) {
			line += " at line " + located.getLocation().getLineNr() + ", column " + located.getLocation().getColumnNr();
		}
		return line;
	}

	/** Python's {@code json.dumps} layout: one line, {@code ", "} between entries and {@code ": "} after keys. */
	static final class PythonStylePrinter implements PrettyPrinter {

		@Override
		public void writeRootValueSeparator(JsonGenerator g) throws IOException {
			g.writeRaw(' ');
		}

		@Override
		public void writeStartObject(JsonGenerator g) throws IOException {
			g.writeRaw('{');
		}

		@Override
		public void writeEndObject(JsonGenerator g, int nrOfEntries) throws IOException {
			g.writeRaw('}');
		}

		@Override
		public void writeObjectEntrySeparator(JsonGenerator g) throws IOException {
			g.writeRaw(", ");
		}

		@Override
		public void writeObjectFieldValueSeparator(JsonGenerator g) throws IOException {
			g.writeRaw(": ");
		}

		@Override
		public void writeStartArray(JsonGenerator g) throws IOException {
			g.writeRaw('[');
		}

		@Override
		public void writeEndArray(JsonGenerator g, int nrOfValues) throws IOException {
			g.writeRaw(']');
		}

		@Override
		public void writeArrayValueSeparator(JsonGenerator g) throws IOException {
			g.writeRaw(", ");
		}

		@Override
		public void beforeArrayValues(JsonGenerator g) {
			// Python writes nothing between '[' and the first value.
		}

		@Override
		public void beforeObjectEntries(JsonGenerator g) {
			// Python writes nothing between '{' and the first key.
		}
	}
}
