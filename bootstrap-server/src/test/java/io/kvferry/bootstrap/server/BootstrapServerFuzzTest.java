package io.kvferry.bootstrap.server;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import io.kvferry.bootstrap.server.RawHttp.Answer;
import io.kvferry.bootstrap.server.RawHttp.Mode;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.slf4j.LoggerFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fuzzes a real server over loopback sockets: thousands of malformed requests (mutated and random JSON bodies, odd
 * query strings, methods and headers, raw garbage), clients that send one byte at a time, clients that stall halfway
 * and clients that never send. Every answer must be a 4xx (or a 200 where a mutation happens to stay valid), never a
 * 5xx, never a hang, never bytes that are not HTTP; a connection may close unanswered only where the request could
 * not be framed or the server legitimately stopped reading. Afterwards the server must still serve health,
 * registration, look-up and metrics.
 * <p>
 * Deterministic: case {@code i} is generated from {@code new Random(seed, i)} whatever the thread that runs it. Run
 * another sample with {@code -Dkvferry.fuzz.seed=N}; failures print the seed, the case and the answer.
 */
class BootstrapServerFuzzTest {

	private static final long SEED = Long.getLong("kvferry.fuzz.seed", 20_260_224L);

	private static final int MAX_BODY = 8 * 1024;
	private static final Duration IDLE_TIMEOUT = Duration.ofSeconds(8);
	private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(5);
	private static final int STORM_THREADS = 4;
	private static final Duration STORM_DEADLINE = Duration.ofSeconds(100);

	/** How many cases of each kind; timed ones (stalled, silent) run on their own threads, all at once. */
	private static final Map<Category, Integer> COUNTS = Map.of(
			Category.JSON_BODY, 1800,
			Category.QUERY, 700,
			Category.METHOD, 300,
			Category.HEADERS, 300,
			Category.GARBAGE, 400,
			Category.BYTE_BY_BYTE, 24,
			Category.STALLED, 16,
			Category.SILENT, 16);

	private static final String REGISTRATION = TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 5000);
	private static final String CURRENT_REGISTRATION = "{\"role\": \"Prefill\", \"attn_tp_size\": 1, \"attn_tp_rank\": "
			+ "0, \"attn_cp_size\": 1, \"attn_cp_rank\": 0, \"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, "
			+ "\"pp_rank\": 0, \"system_dp_size\": 1, \"system_dp_rank\": 0, \"rank_ip\": \"10.0.0.1\", \"rank_port\": "
			+ "5000, \"page_size\": 16, \"kv_cache_dtype\": \"auto\", \"load_balance_method\": "
			+ "\"follow_bootstrap_room\"}";
	private static final String DP_RANK = "{\"bootstrap_room\": 12345, \"dp_rank\": 0}";
	private static final String DP_QUERY = "{\"bootstrap_rooms\": [12345, 1, 2]}";
	private static final String LOOKUP = "/route?engine_rank=0&target_dp_group=0&target_pp_rank=0";

	private static final String[] FIELDS = { "role", "attn_tp_size", "attn_tp_rank", "attn_cp_size", "attn_cp_rank",
			"attn_dp_size", "attn_dp_rank", "pp_size", "pp_rank", "system_dp_size", "system_dp_rank", "rank_ip",
			"rank_port", "page_size", "kv_cache_dtype", "load_balance_method", "bootstrap_room", "dp_rank",
			"bootstrap_rooms" };

	/** JSON values (as text) that break parsers or validators: wrong types, edge numbers, odd strings, deep nesting. */
	private static final String[] NASTY = { "null", "true", "false", "\"\"", "\"0\"", "\" 7 \"", "\"-1\"", "\"5e3\"",
			"[]", "{}", "[0]", "{\"a\": 0}", "-1", "0", "-0", "1.0", "1.5", "1e2", "1E400", "-1e400", "1e-400",
			"2147483647", "2147483648", "-2147483649", "9223372036854775807", "9223372036854775808",
			"18446744073709551616", "-9223372036854775809", "1" + "0".repeat(63), "1" + "0".repeat(64),
			"9".repeat(200), "0." + "0".repeat(70) + "1", "1." + "5".repeat(100), "NaN", "-NaN", "Infinity",
			"-Infinity", "+1", "01", "0x1F", ".5", "5.", "1e", "-", "--1", "\"\\u0000\"", "\"\\ud800\"",
			"\"\\udc00\\ud800\"", "\"\\uZZZZ\"", "\"\\q\"", "\"\u00e9\u4e2d\ud83d\ude00\"", "\"\u202e\"",
			"\"" + "x".repeat(MAX_BODY + 10) + "\"", "\"unterminated", "'single'", "undefined", "None", "True",
			"[1,]", "{\"a\":}", "{,}", "[,1]", "[".repeat(33) + "]".repeat(33), "[".repeat(3000) + "]".repeat(3000),
			"{\"a\":".repeat(40) + "1" + "}".repeat(40), "[" + "[],".repeat(2000) + "[]]", "[" + "0,".repeat(3000)
					+ "0]", "[" + "[1,[2,[3]]],".repeat(400) + "0]" };

	private static final String[] PATHS = { "/route", "/health", "/register_dp_rank", "/query_dp_ranks", "/metrics",
			"/", "/route/", "//route", "/ROUTE", "/%72oute", "/route;a=b", "/./route", "/../route", "/route%00",
			"/route%2F", "/ro%zzute", "/route%", "/%", "*", "/\u00e9", "/" + "a".repeat(200),
			"http://127.0.0.1/route", "/health?x=%zz" };

	private static final String[] PARAMS = { "engine_rank", "target_dp_group", "target_pp_rank", "prefill_dp_rank",
			"prefill_cp_rank", "target_tp_rank", "x", "", "ENGINE_RANK", "engine_rank[]" };

	private static final String[] QUERY_VALUES = { "-1", "0", "1", "2", "-2", "00", "+1", "%201", "1%20", "0x1",
			"1e3", "1.0", "2147483647", "2147483648", "-2147483649", "99999999999999999999999", "", "abc", "%30",
			"%2D1", "%zz", "%", "%%", "%u0030", "%C0%AF", "%E2%80%AE", "%D9%A3", "NaN", "null", "true", "[]", "%00",
			"+", "+-1", "-1-1", "%FF%FE" };

	private static final String[] METHODS = { "GET", "PUT", "POST", "HEAD", "DELETE", "PATCH", "OPTIONS", "TRACE",
			"CONNECT", "FOO", "get", "Put", "G", "PRI", "M-SEARCH", "PROPFIND" };

	/** A scalar or flat array value after a key, in the compact JSON the tests send. */
	private static final Pattern VALUE = Pattern.compile(": (-?\\d+|\"[^\"]*\"|\\[[^\\]]*\\])");

	private static final String TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			+ "!#$%&'*+-.^_`|~";

	enum Category {
		JSON_BODY, QUERY, METHOD, HEADERS, GARBAGE, BYTE_BY_BYTE, STALLED, SILENT
	}

	/**
	 * One generated request and what may come back.
	 *
	 * @param allowed the statuses that may answer it; empty when it must not be answered at all
	 * @param mayCloseUnanswered whether closing without an answer is acceptable (unframable input, early close)
	 */
	record Case(int index, Category category, String label, byte[] request, Mode mode, Set<Integer> allowed,
			boolean mayCloseUnanswered) {

		String describe() {
			String text = new String(request, 0, Math.min(request.length, 160), StandardCharsets.ISO_8859_1);
			return "#" + index + " " + category + " " + label + " [" + request.length + " bytes] "
					+ text.replace("\r", "\\r").replace("\n", "\\n");
		}
	}

	private DisposableBootstrapServer server;
	private PrometheusMeterRegistry registry;
	private Logger decodeLogger;
	private Level decodeLevel;

	@BeforeEach
	void bind() {
		// Reactor Netty logs every undecodable request at WARN; thousands of them would only bury real problems.
		decodeLogger = (Logger) LoggerFactory.getLogger("reactor.netty.http.server.HttpServerOperations");
		decodeLevel = decodeLogger.getLevel();
		decodeLogger.setLevel(Level.ERROR);
		registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
		server = BootstrapServer.create()
				.host("127.0.0.1")
				.port(0)
				.maxBodyBytes(MAX_BODY)
				.idleTimeout(IDLE_TIMEOUT)
				.requestTimeout(REQUEST_TIMEOUT)
				.metrics(registry)
				.bindNow();
	}

	@AfterEach
	void dispose() {
		server.disposeNow();
		registry.close();
		decodeLogger.setLevel(decodeLevel);
	}

	@Test
	void answersThousandsOfMalformedRequestsWith4xxAndKeepsServing(TestReporter reporter) throws Exception {
		TestHttp http = new TestHttp(server.address());
		assertThat(http.put("/route", REGISTRATION).statusCode()).isEqualTo(200);
		int port = server.address().port();

		List<Case> storm = new ArrayList<>();
		List<Case> timed = new ArrayList<>();
		int index = 0;
		for (Category category : Category.values()) {
			for (int i = 0; i < COUNTS.get(category); i++, index++) {
				Case generated = generate(category, index, new Random(SEED * 1_000_003L + index));
				(category == Category.STALLED || category == Category.SILENT ? timed : storm).add(generated);
			}
		}

		Queue<String> failures = new ConcurrentLinkedQueue<>();
		Map<String, Integer> outcomes = new TreeMap<>();
		ExecutorService timedPool = Executors.newFixedThreadPool(timed.size());
		ExecutorService stormPool = Executors.newFixedThreadPool(STORM_THREADS);
		try {
			List<Future<String>> results = new ArrayList<>();
			for (Case c : timed) {
				results.add(timedPool.submit(() -> run(port, c, failures)));
			}
			for (Case c : storm) {
				results.add(stormPool.submit(() -> run(port, c, failures)));
			}
			for (Future<String> result : results) {
				outcomes.merge(result.get(STORM_DEADLINE.toSeconds(), TimeUnit.SECONDS), 1, Integer::sum);
			}
		}
		finally {
			stormPool.shutdownNow();
			timedPool.shutdownNow();
		}

		String summary = "seed=" + SEED + " cases=" + (storm.size() + timed.size()) + " " + outcomes;
		reporter.publishEntry("fuzz", summary);
		System.out.println("Bootstrap server fuzz: " + summary);
		assertThat(failures).as("fuzz failures (%s)", summary).isEmpty();
		assertThat(outcomes.keySet()).as("no 5xx").noneMatch(outcome -> outcome.matches(".*=5\\d\\d"));

		// The storm left the server serving, and its one registered rank as it was.
		assertThat(http.get("/health").body()).isEqualTo("OK");
		assertThat(http.get(LOOKUP).body()).isEqualTo("{\"rank_ip\": \"10.0.0.1\", \"rank_port\": 5000}");
		assertThat(http.put("/route", TestHttp.registration(1, 0, 1, 0, 1, 0, "10.9.9.9", 7777)).statusCode())
				.isEqualTo(200);
		assertThat(http.get(LOOKUP).body()).isEqualTo("{\"rank_ip\": \"10.9.9.9\", \"rank_port\": 7777}");
		assertThat(http.get("/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1").statusCode())
				.isEqualTo(200);
		assertThat(server.registeredCount()).isEqualTo(1);
		// Junk cannot blow up the series count: unknown routes and methods share one tag value each.
		HttpResponse<String> scrape = http.get("/metrics");
		assertThat(scrape.statusCode()).isEqualTo(200);
		long series = scrape.body().lines().filter(line -> line.startsWith("kvferry_bootstrap_requests_total{"))
				.count();
		assertThat(series).isBetween(5L, 300L);
	}

	/** Runs one case; records a failure when the answer breaks its rule. @return "CATEGORY=outcome" */
	private static String run(int port, Case c, Queue<String> failures) {
		Answer answer = RawHttp.exchange(port, c.request(), c.mode());
		String problem = judge(c, answer);
		if (problem != null) {
			failures.add("seed " + SEED + " case " + c.describe() + ": " + problem + " -> " + answer.preview());
		}
		String outcome = answer.hung() ? "hung" : answer.status() > 0 ? Integer.toString(answer.status())
				: answer.bytes().length > 0 ? "garbage" : "closed";
		return c.category() + "=" + outcome;
	}

	private static String judge(Case c, Answer answer) {
		if (answer.hung()) {
			return "no answer and no close within " + RawHttp.READ_TIMEOUT.toSeconds() + " s";
		}
		if (answer.status() == 0) {
			if (answer.bytes().length > 0) {
				return "answer is not HTTP";
			}
			boolean closedEarly = answer.writeFailed() || answer.reset();
			return c.mayCloseUnanswered() || closedEarly || c.allowed().isEmpty() ? null : "closed without an answer";
		}
		if (answer.status() >= 500) {
			return "server error";
		}
		if (!c.allowed().contains(answer.status())) {
			return "status " + answer.status() + " (expected one of " + c.allowed() + ")";
		}
		return null;
	}

	private static Case generate(Category category, int index, Random random) {
		return switch (category) {
			case JSON_BODY -> jsonCase(index, random);
			case QUERY -> queryCase(index, random);
			case METHOD -> methodCase(index, random);
			case HEADERS -> headerCase(index, random);
			case GARBAGE -> garbageCase(index, random);
			case BYTE_BY_BYTE -> byteByByteCase(index, random);
			case STALLED -> stalledCase(index, random);
			case SILENT -> new Case(index, category, "never sends", new byte[0], Mode.SILENT, Set.of(), true);
		};
	}

	// ---- JSON bodies -------------------------------------------------------------------------------------------

	private static Case jsonCase(int index, Random random) {
		String[] endpoints = { "PUT /route", "POST /register_dp_rank", "POST /query_dp_ranks" };
		String endpoint = endpoints[random.nextInt(endpoints.length)];
		String base = switch (endpoint) {
			case "PUT /route" -> random.nextBoolean() ? REGISTRATION : CURRENT_REGISTRATION;
			case "POST /register_dp_rank" -> DP_RANK;
			default -> DP_QUERY;
		};
		String label;
		byte[] body;
		switch (random.nextInt(4)) {
			case 0 -> {
				label = "mutated bytes";
				body = mutate(random, base.getBytes(StandardCharsets.UTF_8));
			}
			case 1 -> {
				label = "nasty values";
				body = replaceValues(random, base).getBytes(StandardCharsets.UTF_8);
			}
			case 2 -> {
				label = "random JSON";
				StringBuilder json = new StringBuilder();
				value(random, json, 0, 1 + random.nextInt(40));
				body = json.toString().getBytes(StandardCharsets.UTF_8);
			}
			default -> {
				label = "nasty document";
				String nasty = NASTY[random.nextInt(NASTY.length)];
				String document = switch (random.nextInt(3)) {
					case 0 -> nasty;
					case 1 -> "{\"bootstrap_rooms\": " + nasty + "}";
					default -> "{\"" + FIELDS[random.nextInt(FIELDS.length)] + "\": " + nasty + "}";
				};
				body = document.getBytes(StandardCharsets.UTF_8);
			}
		}
		boolean chunked = random.nextInt(5) == 0;
		String[] parts = endpoint.split(" ");
		byte[] request = chunked ? chunkedRequest(parts[0], parts[1], body, random) : request(parts[0], parts[1], body);
		// A body over the limit is refused before it is read: the server may close on unread bytes (a reset).
		boolean oversized = body.length > MAX_BODY;
		return new Case(index, Category.JSON_BODY, endpoint + " " + label + (chunked ? " chunked" : ""), request,
				Mode.WHOLE, oversized ? Set.of(413) : Set.of(200, 400, 413), oversized);
	}

	private static byte[] mutate(Random random, byte[] input) {
		byte[] bytes = input;
		for (int n = 1 + random.nextInt(4); n > 0; n--) {
			int at = random.nextInt(bytes.length + 1);
			switch (random.nextInt(7)) {
				case 0 -> bytes = Arrays.copyOf(bytes, at);
				case 1 -> {
					if (bytes.length > 0) {
						bytes = bytes.clone();
						bytes[Math.min(at, bytes.length - 1)] = (byte) random.nextInt(256);
					}
				}
				case 2 -> bytes = splice(bytes, at, at, junkBytes(random));
				case 3 -> bytes = splice(bytes, at, Math.min(bytes.length, at + 1 + random.nextInt(20)), new byte[0]);
				case 4 -> {
					int end = Math.min(bytes.length, at + 1 + random.nextInt(40));
					bytes = splice(bytes, end, end, Arrays.copyOfRange(bytes, at, end));
				}
				case 5 -> {
					// Duplicated key: Python and Jackson both keep the last one.
					String pair = "\"" + FIELDS[random.nextInt(FIELDS.length)] + "\": " + NASTY[random.nextInt(
							NASTY.length)] + ", ";
					int brace = indexOf(bytes, (byte) '{');
					bytes = splice(bytes, brace + 1, brace + 1, pair.getBytes(StandardCharsets.UTF_8));
				}
				default -> {
					String[] wrappers = { "[%s]", "\ufeff%s", "%s garbage", "%s}", "{%s", "%s\u0000", " \t\r\n%s",
							"%s%s" };
					String wrapped = String.format(wrappers[random.nextInt(wrappers.length)],
							new String(bytes, StandardCharsets.ISO_8859_1), new String(bytes,
									StandardCharsets.ISO_8859_1));
					bytes = wrapped.getBytes(StandardCharsets.ISO_8859_1);
				}
			}
		}
		return bytes;
	}

	private static byte[] junkBytes(Random random) {
		String[] pieces = { "{", "}", "[", "]", ",", ":", "\"", "\\", "-", "0", "e", ".", " ", "\u00e9", "\ud83d\ude00",
				"null", "\\u", "\\ud800" };
		ByteArrayOutputStream out = new ByteArrayOutputStream();
		for (int n = 1 + random.nextInt(6); n > 0; n--) {
			switch (random.nextInt(3)) {
				case 0 -> out.writeBytes(pieces[random.nextInt(pieces.length)].getBytes(StandardCharsets.UTF_8));
				// Invalid UTF-8: a lone continuation byte, a truncated lead, an overlong encoding.
				case 1 -> out.writeBytes(new byte[][] { { (byte) 0x80 }, { (byte) 0xC3 }, { (byte) 0xC0, (byte) 0xAF },
						{ (byte) 0xED, (byte) 0xA0, (byte) 0x80 }, { (byte) 0xFF } }[random.nextInt(5)]);
				default -> out.write(random.nextInt(256));
			}
		}
		return out.toByteArray();
	}

	private static String replaceValues(Random random, String json) {
		String result = json;
		for (int n = 1 + random.nextInt(3); n > 0; n--) {
			Matcher values = VALUE.matcher(result);
			List<int[]> spans = new ArrayList<>();
			while (values.find()) {
				spans.add(new int[] { values.start(1), values.end(1) });
			}
			if (spans.isEmpty()) {
				break;
			}
			int[] span = spans.get(random.nextInt(spans.size()));
			result = result.substring(0, span[0]) + NASTY[random.nextInt(NASTY.length)] + result.substring(span[1]);
		}
		return result;
	}

	/** Appends a random JSON value of at most {@code maxDepth} levels, stopping growth past twice the body limit. */
	private static void value(Random random, StringBuilder out, int depth, int maxDepth) {
		int kind = depth >= maxDepth || out.length() > 2 * MAX_BODY ? 2 + random.nextInt(4) : random.nextInt(6);
		switch (kind) {
			case 0 -> {
				out.append('{');
				for (int i = random.nextInt(7); i > 0 && out.length() <= 2 * MAX_BODY; i--) {
					out.append('"').append(random.nextInt(3) > 0 ? FIELDS[random.nextInt(FIELDS.length)]
							: randomString(random)).append("\": ");
					value(random, out, depth + 1, maxDepth);
					out.append(i > 1 ? ", " : "");
				}
				out.append('}');
			}
			case 1 -> {
				out.append('[');
				for (int i = random.nextInt(9); i > 0 && out.length() <= 2 * MAX_BODY; i--) {
					value(random, out, depth + 1, maxDepth);
					out.append(i > 1 ? "," : "");
				}
				out.append(']');
			}
			case 2 -> out.append('"').append(randomString(random)).append('"');
			case 3 -> out.append(random.nextBoolean() ? Long.toString(random.nextLong() >> random.nextInt(64))
					: Integer.toString(random.nextInt(5) - 1));
			case 4 -> out.append(new String[] { "true", "false", "null" }[random.nextInt(3)]);
			default -> out.append(NASTY[random.nextInt(NASTY.length)]);
		}
	}

	private static String randomString(Random random) {
		String[] pieces = { "a", "10.0.0.1", "Prefill", "Decode", "\\n", "\\\"", "\\\\", "\\u0041", "\\ud83d\\ude00",
				"\u00e9", "\u4e2d", "\ud83d\ude00", "\u0301", " ", "\\t", "\\/", "%", "<", "\u2028" };
		StringBuilder text = new StringBuilder();
		for (int n = random.nextInt(6); n > 0; n--) {
			text.append(pieces[random.nextInt(pieces.length)]);
		}
		return text.toString();
	}

	// ---- Query strings ---------------------------------------------------------------------------------------

	private static Case queryCase(int index, Random random) {
		String path = random.nextInt(5) > 0 ? "/route" : PATHS[random.nextInt(PATHS.length)];
		StringBuilder query = new StringBuilder();
		boolean huge = random.nextInt(40) == 0;
		int params = huge ? 1200 : random.nextInt(9);
		for (int i = 0; i < params; i++) {
			String name = PARAMS[random.nextInt(PARAMS.length)];
			if (random.nextInt(6) == 0) {
				name = percentEncodeAll(name);
			}
			String value = QUERY_VALUES[random.nextInt(QUERY_VALUES.length)];
			String[] separators = { "&", "&", "&", "&&", ";", "&=&" };
			query.append(i == 0 ? "" : separators[random.nextInt(separators.length)]).append(name);
			if (random.nextInt(8) > 0) {
				query.append('=').append(value);
			}
			if (random.nextInt(10) == 0) {
				// The same parameter again, with another value: the first one counts, as in aiohttp.
				query.append('&').append(name).append('=').append(QUERY_VALUES[random.nextInt(QUERY_VALUES.length)]);
			}
		}
		if (random.nextInt(15) == 0) {
			query.append("#fragment");
		}
		if (random.nextInt(25) == 0) {
			query.append("&x=").append("9".repeat(5000));
		}
		String target = path + (query.length() > 0 || random.nextBoolean() ? "?" + query : "");
		byte[] request = ("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
				.getBytes(StandardCharsets.UTF_8);
		// A request line over 4096 bytes is refused (414) before the headers are read.
		boolean longLine = target.length() > 4000;
		return new Case(index, Category.QUERY, longLine ? "long query" : "query", request, Mode.WHOLE,
				Set.of(200, 400, 404, 405, 414), longLine);
	}

	private static String percentEncodeAll(String text) {
		StringBuilder encoded = new StringBuilder();
		for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
			encoded.append('%').append(String.format("%02X", b & 0xff));
		}
		return encoded.toString();
	}

	// ---- Methods ---------------------------------------------------------------------------------------------

	private static Case methodCase(int index, Random random) {
		String method;
		switch (random.nextInt(4)) {
			case 0, 1 -> method = METHODS[random.nextInt(METHODS.length)];
			case 2 -> {
				StringBuilder token = new StringBuilder();
				for (int n = 1 + random.nextInt(16); n > 0; n--) {
					token.append(TOKEN_CHARS.charAt(random.nextInt(TOKEN_CHARS.length())));
				}
				method = token.toString();
			}
			default -> method = new String[] { "GE\u0001T", "G\u00e9T", "", "\tGET", "GET\u0000", "(GET)",
					"X".repeat(5000) }[random.nextInt(7)];
		}
		String path = PATHS[random.nextInt(PATHS.length)];
		byte[] request = (method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
				+ "Connection: close\r\n\r\n").getBytes(StandardCharsets.UTF_8);
		return new Case(index, Category.METHOD, method.length() > 20 ? "long method" : method, request, Mode.WHOLE,
				Set.of(200, 400, 404, 405, 414), method.length() > 4000);
	}

	// ---- Headers ---------------------------------------------------------------------------------------------

	private static Case headerCase(int index, Random random) {
		boolean put = random.nextBoolean();
		byte[] body = put ? REGISTRATION.getBytes(StandardCharsets.UTF_8) : new byte[0];
		String start = put ? "PUT /route HTTP/1.1\r\n" : "GET " + LOOKUP + " HTTP/1.1\r\n";
		String length = "Content-Length: " + body.length + "\r\n";
		String label;
		String headers;
		String bodyText = new String(body, StandardCharsets.ISO_8859_1);
		switch (random.nextInt(14)) {
			case 0 -> {
				label = "huge header";
				headers = "Host: x\r\nX-Big: " + "b".repeat(8192 + random.nextInt(8192)) + "\r\n" + length;
			}
			case 1 -> {
				label = "many headers";
				headers = "Host: x\r\n" + "X-N: v\r\n".repeat(200 + random.nextInt(1500)) + length;
			}
			case 2 -> {
				label = "conflicting lengths";
				headers = "Host: x\r\n" + length + "Content-Length: " + (body.length + 1 + random.nextInt(5)) + "\r\n";
			}
			case 3 -> {
				label = "bad length";
				String[] lengths = { "-1", "abc", "1e3", "99999999999999999999", "+5", "0x10", "", " ", "5, 5" };
				headers = "Host: x\r\nContent-Length: " + lengths[random.nextInt(lengths.length)] + "\r\n";
			}
			case 4 -> {
				label = "bad chunks";
				String[] chunks = { "zz\r\nabc\r\n0\r\n\r\n", "-1\r\nabc\r\n0\r\n\r\n",
						"ffffffffffffffffff\r\nabc\r\n0\r\n\r\n", "3\r\nabcdef\r\n0\r\n\r\n",
						"3;x=y\r\n{}}\r\n0\r\n\r\n",
						"1\r\n{\r\n1\r\n}\r\n0\r\nTrailer: x\r\n\r\n" };
				headers = "Host: x\r\nTransfer-Encoding: chunked\r\n";
				bodyText = chunks[random.nextInt(chunks.length)];
			}
			case 5 -> {
				label = "length and chunked";
				headers = "Host: x\r\n" + length + "Transfer-Encoding: chunked\r\n";
			}
			case 6 -> {
				label = "odd transfer encoding";
				String[] encodings = { "gzip", "chunked, chunked", "identity", "chunked, gzip", "xchunked" };
				headers = "Host: x\r\nTransfer-Encoding: " + encodings[random.nextInt(encodings.length)] + "\r\n"
						+ length;
			}
			case 7 -> {
				label = "bad header name";
				String[] names = { "X Y: 1", "X\u0001: 1", ": novalue", "NoColon", "X-A : 1", "\u00e9: 1" };
				headers = "Host: x\r\n" + names[random.nextInt(names.length)] + "\r\n" + length;
			}
			case 8 -> {
				label = "folded header";
				headers = "Host: x\r\nX-A: 1\r\n  continued\r\n" + length;
			}
			case 9 -> {
				label = "control characters";
				headers = "Host: x\r\nX-A: a\u0000b\u007f\r\n" + length;
			}
			case 10 -> {
				label = "bare line feeds";
				start = start.replace("\r\n", "\n");
				headers = "Host: x\n" + length.replace("\r\n", "\n");
			}
			case 11 -> {
				label = "expectation";
				String[] expect = { "100-continue", "foo", "" };
				headers = "Host: x\r\nExpect: " + expect[random.nextInt(expect.length)] + "\r\n" + (random.nextBoolean()
						? length : "Content-Length: 100000\r\n");
			}
			case 12 -> {
				label = "odd authorization";
				String[] auth = { "Bearer", "Bearer " + "t".repeat(6000), "Basic !!!", "bearer\ttoken",
						"Bearer \u00e9" };
				headers = "Host: x\r\nAuthorization: " + auth[random.nextInt(auth.length)] + "\r\n" + length;
			}
			default -> {
				label = "short length";
				headers = "Host: x\r\nContent-Length: " + Math.max(0, body.length - 1 - random.nextInt(20)) + "\r\n";
			}
		}
		byte[] request = (start + headers + "Connection: close\r\n\r\n" + bodyText)
				.getBytes(StandardCharsets.ISO_8859_1);
		// Refused requests are closed with bytes still unread: the connection may be reset before the answer shows.
		return new Case(index, Category.HEADERS, label, request, Mode.WHOLE, Set.of(200, 400, 404, 408, 413, 414, 417,
				431), true);
	}

	// ---- Raw garbage -----------------------------------------------------------------------------------------

	private static Case garbageCase(int index, Random random) {
		byte[] bytes;
		String label;
		switch (random.nextInt(6)) {
			case 0 -> {
				label = "random bytes";
				bytes = new byte[1 + random.nextInt(3000)];
				random.nextBytes(bytes);
			}
			case 1 -> {
				label = "random lines";
				StringBuilder lines = new StringBuilder();
				for (int n = 1 + random.nextInt(10); n > 0; n--) {
					for (int c = random.nextInt(80); c > 0; c--) {
						lines.append((char) (32 + random.nextInt(95)));
					}
					lines.append(random.nextBoolean() ? "\r\n" : "\n");
				}
				bytes = lines.toString().getBytes(StandardCharsets.US_ASCII);
			}
			case 2 -> {
				label = "TLS client hello";
				bytes = new byte[] { 0x16, 0x03, 0x01, 0x00, (byte) 0xa5, 0x01, 0x00, 0x00, (byte) 0xa1, 0x03, 0x03 };
			}
			case 3 -> {
				label = "HTTP/2 preface";
				bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
			}
			case 4 -> {
				label = "endless line";
				bytes = ("GET /" + "A".repeat(5000 + random.nextInt(5000))).getBytes(StandardCharsets.US_ASCII);
			}
			default -> {
				label = "blank lines";
				bytes = "\r\n".repeat(1 + random.nextInt(50)).getBytes(StandardCharsets.US_ASCII);
			}
		}
		// The client closes its side after sending: unframable input may be dropped without an answer.
		return new Case(index, Category.GARBAGE, label, bytes, Mode.HALF_CLOSE, Set.of(400, 408, 414, 431), true);
	}

	// ---- Slow and stalled clients -----------------------------------------------------------------------------

	private static Case byteByByteCase(int index, Random random) {
		return switch (random.nextInt(3)) {
			case 0 -> new Case(index, Category.BYTE_BY_BYTE, "lookup", ("GET " + LOOKUP + " HTTP/1.1\r\nHost: x\r\n"
					+ "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII), Mode.BYTE_BY_BYTE, Set.of(200),
					false);
			case 1 -> new Case(index, Category.BYTE_BY_BYTE, "registration", request("PUT", "/route",
					REGISTRATION.getBytes(StandardCharsets.UTF_8)), Mode.BYTE_BY_BYTE, Set.of(200), false);
			default -> new Case(index, Category.BYTE_BY_BYTE, "malformed", request("PUT", "/route",
					"{\"attn_tp_size\": [".getBytes(StandardCharsets.UTF_8)), Mode.BYTE_BY_BYTE, Set.of(400), false);
		};
	}

	private static Case stalledCase(int index, Random random) {
		if (random.nextBoolean()) {
			return new Case(index, Category.STALLED, "head stops", "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "
					.getBytes(StandardCharsets.US_ASCII), Mode.WHOLE, Set.of(408), false);
		}
		return new Case(index, Category.STALLED, "body stops", ("PUT /route HTTP/1.1\r\nHost: x\r\nContent-Length: "
				+ "400\r\nConnection: close\r\n\r\n{\"role\": ").getBytes(StandardCharsets.US_ASCII), Mode.WHOLE,
				Set.of(408), false);
	}

	// ---- Helpers ---------------------------------------------------------------------------------------------

	private static byte[] request(String method, String path, byte[] body) {
		byte[] head = (method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
				+ "Content-Length: " + body.length + "\r\nConnection: close\r\n\r\n")
				.getBytes(StandardCharsets.US_ASCII);
		return splice(head, head.length, head.length, body);
	}

	private static byte[] chunkedRequest(String method, String path, byte[] body, Random random) {
		ByteArrayOutputStream out = new ByteArrayOutputStream();
		out.writeBytes((method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
				+ "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
		for (int at = 0; at < body.length;) {
			int size = Math.min(body.length - at, 1 + random.nextInt(512));
			out.writeBytes((Integer.toHexString(size) + "\r\n").getBytes(StandardCharsets.US_ASCII));
			out.write(body, at, size);
			out.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
			at += size;
		}
		out.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
		return out.toByteArray();
	}

	private static byte[] splice(byte[] bytes, int from, int to, byte[] insert) {
		byte[] result = new byte[bytes.length - (to - from) + insert.length];
		System.arraycopy(bytes, 0, result, 0, from);
		System.arraycopy(insert, 0, result, from, insert.length);
		System.arraycopy(bytes, to, result, from + insert.length, bytes.length - to);
		return result;
	}

	private static int indexOf(byte[] bytes, byte b) {
		for (int i = 0; i < bytes.length; i++) {
			if (bytes[i] == b) {
				return i;
			}
		}
		return -1;
	}

}
