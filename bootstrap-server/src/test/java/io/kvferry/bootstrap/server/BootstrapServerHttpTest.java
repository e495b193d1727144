package io.kvferry.bootstrap.server;

import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Drives a real server on 127.0.0.1 with the JDK's HTTP client: SGLang's older protocol end to end and every error
 * status.
 */
class BootstrapServerHttpTest {

	private static final int MAX_BODY = 1024;
	private static final ObjectMapper MAPPER = new ObjectMapper();

	private DisposableBootstrapServer server;
	private TestHttp http;

	@BeforeEach
	void bind() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).maxBodyBytes(MAX_BODY).bindNow();
		http = new TestHttp(server.address());
	}

	@AfterEach
	void dispose() {
		server.disposeNow();
	}

	@Test
	void servesAFullPrefillRegistrationAndEveryDecodeLookup() {
		int dp = 2;
		int tp = 4;
		int pp = 2;
		assertText(http.get("/health"), 200, "OK");
		assertText(http.get(parallelInfo()), 503, "Prefill server not fully registered yet (0 workers registered).");

		int registered = 0;
		for (int d = 0; d < dp; d++) {
			for (int t = 0; t < tp; t++) {
				for (int p = 0; p < pp; p++) {
					boolean last = d == dp - 1 && t == tp - 1 && p == pp - 1;
					if (last) {
						assertText(http.get(parallelInfo()), 503,
								"Prefill server not fully registered yet (15 workers registered).");
						// Registering a rank again must not make the instance look complete (SGLang counts PUTs).
						assertText(http.put("/route", TestHttp.registration(tp, 0, dp, 0, pp, 0, "10.0.0.1",
								portOf(0, 0, 0))), 200, "OK");
						assertText(http.get(parallelInfo()), 503,
								"Prefill server not fully registered yet (15 workers registered).");
					}
					HttpResponse<String> put = http.put("/route", TestHttp.registration(tp, t, dp, d, pp, p,
							"10.0.0." + (d + 1), portOf(d, t, p)));
					assertText(put, 200, "OK");
					registered++;
					assertThat(server.registeredCount()).isEqualTo(registered);
				}
			}
		}

		HttpResponse<String> info = http.get(parallelInfo());
		assertThat(info.statusCode()).isEqualTo(200);
		assertThat(info.headers().firstValue("content-type")).hasValue("application/json; charset=utf-8");
		assertThat(info.body()).isEqualTo("{\"prefill_attn_tp_size\": 4, \"prefill_dp_size\": 2, "
				+ "\"prefill_pp_size\": 2, \"prefill_page_size\": 16}");
		for (int d = 0; d < dp; d++) {
			for (int t = 0; t < tp; t++) {
				for (int p = 0; p < pp; p++) {
					HttpResponse<String> rank = http.get("/route?engine_rank=" + t + "&target_dp_group=" + d
							+ "&target_pp_rank=" + p);
					assertThat(rank.statusCode()).isEqualTo(200);
					assertThat(rank.body()).isEqualTo("{\"rank_ip\": \"10.0.0." + (d + 1) + "\", \"rank_port\": "
							+ portOf(d, t, p) + "}");
				}
			}
		}
		assertThat(server.registeredCount()).isEqualTo(16);
	}

	@Test
	void groupsRanksBySystemDpRankWithoutDpAttention() {
		for (int d = 0; d < 2; d++) {
			String body = "{\"role\": \"Prefill\", \"attn_tp_size\": 1, \"attn_tp_rank\": 0, \"attn_dp_size\": 1, "
					+ "\"attn_dp_rank\": 0, \"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 2, "
					+ "\"system_dp_rank\": " + d + ", \"rank_ip\": \"::1\", \"rank_port\": " + (7000 + d)
					+ ", \"page_size\": 1}";
			assertText(http.put("/route", body), 200, "OK");
		}
		assertThat(http.get(parallelInfo()).body()).isEqualTo("{\"prefill_attn_tp_size\": 1, \"prefill_dp_size\": 2, "
				+ "\"prefill_pp_size\": 1, \"prefill_page_size\": 1}");
		assertThat(http.get("/route?engine_rank=0&target_dp_group=1&target_pp_rank=0").body())
				.isEqualTo("{\"rank_ip\": \"::1\", \"rank_port\": 7001}");
	}

	@Test
	void overwritesARankThatRegistersAgain() {
		assertText(http.put("/route", TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 5000)), 200, "OK");
		assertText(http.put("/route", TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.2", 5001)), 200, "OK");
		assertThat(http.get("/route?engine_rank=0&target_dp_group=0&target_pp_rank=0").body())
				.isEqualTo("{\"rank_ip\": \"10.0.0.2\", \"rank_port\": 5001}");
		assertThat(server.registeredCount()).isEqualTo(1);
	}

	@Test
	void ignoresUnknownFieldsAndAcceptsTodaysOptionalFields() {
		ObjectNode body = validRegistration();
		body.put("attn_cp_size", 1).put("attn_cp_rank", 0).put("kv_cache_dtype", "auto")
				.put("load_balance_method", "round_robin").put("prefill_http_port", 30000)
				.put("enable_dsa_cache_layer_split", false).put("something_new", "x");
		body.putObject("nested").put("a", 1);
		assertText(http.put("/route", body.toString()), 200, "OK");
		assertThat(server.registeredCount()).isEqualTo(1);
	}

	@Test
	void answersUnknownRankWith404NamingDpTpPp() {
		assertText(http.put("/route", TestHttp.registration(2, 0, 1, 0, 1, 0, "10.0.0.1", 5000)), 200, "OK");
		assertText(http.get("/route?engine_rank=1&target_dp_group=0&target_pp_rank=0"), 404,
				"Bootstrap info not found for dp_group=0 tp_rank=1 pp_rank=0");
		assertText(http.get("/route?engine_rank=0&target_dp_group=3&target_pp_rank=5"), 404,
				"Bootstrap info not found for dp_group=3 tp_rank=0 pp_rank=5");
	}

	@Test
	void answersUnknownPathsWith404() {
		assertThat(http.get("/nope").statusCode()).isEqualTo(404);
		assertThat(http.get("/nope").body()).contains("/nope");
		assertThat(http.get("/route/").statusCode()).isEqualTo(404);
		assertThat(http.put("/", "{}").statusCode()).isEqualTo(404);
	}

	@ParameterizedTest
	@ValueSource(strings = { "DELETE", "POST", "PATCH", "HEAD", "OPTIONS" })
	void answersOtherMethodsOnRouteWith405AndAllow(String method) {
		HttpResponse<String> response = http.send(method, "/route", BodyPublishers.noBody());
		assertThat(response.statusCode()).isEqualTo(405);
		assertThat(response.headers().firstValue("allow")).hasValue("GET, PUT");
		if (!"HEAD".equals(method)) {
			assertThat(response.body()).isEqualTo("Method not allowed");
		}
	}

	@Test
	void answersHealthToGetAndHeadOnly() {
		HttpResponse<String> head = http.send("HEAD", "/health", BodyPublishers.noBody());
		assertThat(head.statusCode()).isEqualTo(200);
		assertThat(head.body()).isEmpty();
		HttpResponse<String> post = http.post("/health", "");
		assertThat(post.statusCode()).isEqualTo(405);
		assertThat(post.headers().firstValue("allow")).hasValue("GET, HEAD");
		// The connection stays usable after an empty HEAD answer.
		assertText(http.get("/health"), 200, "OK");
	}

	@ParameterizedTest
	@ValueSource(strings = { "role", "attn_tp_size", "attn_tp_rank", "attn_dp_size", "attn_dp_rank", "pp_size",
			"pp_rank", "system_dp_size", "system_dp_rank", "rank_ip", "rank_port", "page_size" })
	void rejectsARegistrationWithAMistypedFieldNamingIt(String field) {
		ObjectNode body = validRegistration();
		if ("role".equals(field) || "rank_ip".equals(field)) {
			body.put(field, 7);
		}
		else {
			body.put(field, "x");
		}
		assertBadRequest(http.put("/route", body.toString()), field);
	}

	@ParameterizedTest
	@ValueSource(strings = { "attn_tp_size", "attn_tp_rank", "attn_dp_size", "attn_dp_rank", "pp_size", "pp_rank",
			"system_dp_size", "system_dp_rank", "rank_ip", "rank_port", "page_size" })
	void rejectsARegistrationWithoutARequiredFieldNamingIt(String field) {
		ObjectNode body = validRegistration();
		body.remove(field);
		HttpResponse<String> response = http.put("/route", body.toString());
		assertBadRequest(response, field);
		assertThat(response.body()).contains("missing");
		body.putNull(field);
		assertBadRequest(http.put("/route", body.toString()), field);
	}

	@ParameterizedTest
	@CsvSource({ "attn_tp_rank, 4", "attn_tp_rank, -1", "attn_dp_rank, 2", "pp_rank, 1", "attn_tp_size, 0",
			"attn_tp_size, -4", "pp_size, -1", "attn_dp_size, 0", "system_dp_size, 0", "system_dp_rank, -1",
			"rank_port, 0", "rank_port, 65536", "rank_port, -5", "page_size, 0", "attn_tp_rank, 1.5",
			"attn_tp_rank, true", "attn_tp_rank, 99999999999", "page_size, 16.0", "rank_ip, ''",
			"attn_tp_size, 100000" })
	void rejectsOutOfRangeOrMistypedValuesNamingTheField(String field, String value) {
		ObjectNode body = validRegistration();
		body.set(field, "''".equals(value) ? MAPPER.getNodeFactory().textNode("") : readValue(value));
		assertBadRequest(http.put("/route", body.toString()), field);
	}

	@Test
	void acceptsPortAndPageSizeAsIntegerStringsAsTheSeedDid() {
		ObjectNode body = validRegistration();
		body.put("rank_port", "5000").put("page_size", "16");
		assertText(http.put("/route", body.toString()), 200, "OK");
		assertThat(http.get("/route?engine_rank=0&target_dp_group=0&target_pp_rank=0").body())
				.isEqualTo("{\"rank_ip\": \"10.0.0.1\", \"rank_port\": 5000}");
	}

	@Test
	void rejectsARankOutsideTheSizesFixedByTheFirstRegistration() {
		assertText(http.put("/route", TestHttp.registration(2, 0, 1, 0, 1, 0, "10.0.0.1", 5000)), 200, "OK");
		HttpResponse<String> response = http.put("/route", TestHttp.registration(4, 3, 1, 0, 1, 0, "10.0.0.1", 5003));
		assertBadRequest(response, "attn_tp_rank");
		assertThat(response.body()).contains("first registration");
		assertThat(server.registeredCount()).isEqualTo(1);
	}

	@ParameterizedTest
	@ValueSource(strings = { "not json", "{\"role\": ", "[1, 2]", "\"text\"", "42", "null", "{} {}", "" })
	void rejectsBodiesThatAreNotOneJsonObject(String body) {
		HttpResponse<String> response = http.put("/route", body);
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(response.body()).startsWith("request body : ");
		assertThat(response.headers().firstValue("content-type")).hasValue("text/plain; charset=utf-8");
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = { "/route|engine_rank", "/route?engine_rank=0|target_dp_group",
			"/route?engine_rank=0&target_dp_group=0|target_pp_rank", "/route?engine_rank=&target_dp_group=0&"
					+ "target_pp_rank=0|engine_rank",
			"/route?engine_rank=0&target_dp_group=x&target_pp_rank=0|target_dp_group",
			"/route?engine_rank=0&target_dp_group=0&target_pp_rank=1.0|target_pp_rank",
			"/route?engine_rank=99999999999&target_dp_group=0&target_pp_rank=0|engine_rank",
			"/route?engine_rank=-2&target_dp_group=0&target_pp_rank=0|engine_rank",
			"/route?engine_rank=0&target_dp_group=-1&target_pp_rank=0|target_dp_group" })
	void rejectsMissingEmptyOrNonIntegerQueryValuesNamingTheParameter(String pathAndQuery, String parameter) {
		assertBadRequest(http.get(pathAndQuery), parameter);
	}

	@Test
	void answersBodiesOverTheLimitWith413() {
		String padded = validRegistration().put("padding", "x".repeat(MAX_BODY)).toString();
		HttpResponse<String> declared = http.put("/route", padded);
		assertThat(declared.statusCode()).isEqualTo(413);
		assertThat(declared.body()).contains(Integer.toString(MAX_BODY));

		HttpResponse<String> chunked = http.putChunked("/route", padded.getBytes(StandardCharsets.UTF_8));
		assertThat(chunked.statusCode()).isEqualTo(413);
		assertThat(server.registeredCount()).isZero();

		// A body of exactly the limit is fine.
		String body = validRegistration().toString();
		String exact = body.substring(0, body.length() - 1) + " ".repeat(MAX_BODY - body.length()) + "}";
		assertThat(exact).hasSize(MAX_BODY);
		assertText(http.putChunked("/route", exact.getBytes(StandardCharsets.UTF_8)), 200, "OK");
	}

	@Test
	void ignoresNonPrefillRoles() {
		ObjectNode body = validRegistration().put("role", "Decode");
		assertText(http.put("/route", body.toString()), 200, "OK");
		assertThat(server.registeredCount()).isZero();
		assertText(http.get(parallelInfo()), 503, "Prefill server not fully registered yet (0 workers registered).");
	}

	private static String parallelInfo() {
		return "/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1";
	}

	private static int portOf(int d, int t, int p) {
		return 20000 + d * 100 + t * 10 + p;
	}

	private static ObjectNode validRegistration() {
		try {
			return (ObjectNode) MAPPER.readTree(TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 5000, 16));
		}
		catch (Exception e) {
			throw new IllegalStateException(e);
		}
	}

	private static JsonNode readValue(String json) {
		try {
			return MAPPER.readTree(json);
		}
		catch (Exception e) {
			throw new IllegalStateException(e);
		}
	}

	private static void assertText(HttpResponse<String> response, int status, String body) {
		assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
		assertThat(response.body()).isEqualTo(body);
	}

	private static void assertBadRequest(HttpResponse<String> response, String field) {
		assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
		assertThat(response.body()).startsWith(field + " : ");
	}
}
