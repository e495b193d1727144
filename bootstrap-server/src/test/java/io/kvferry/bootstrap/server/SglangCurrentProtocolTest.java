package io.kvferry.bootstrap.server;

import java.net.http.HttpResponse;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Today's SGLang bootstrap protocol on the same tables: CP-aware registrations and lookups, the full
 * {@code PrefillServerInfo} answer, and the room → DP rank endpoints.
 */
class SglangCurrentProtocolTest {

	/** The end of every parallel-info answer: SGLang's decode-side fields of {@code PrefillServerInfo}, all null. */
	private static final String DECODE_SCRATCH_NULLS = "\"target_tp_rank\": null, \"target_tp_ranks\": null, "
			+ "\"target_cp_ranks\": null, \"target_pp_ranks\": null, \"required_dst_info_num\": null, "
			+ "\"required_prefill_response_num\": null}";

	private DisposableBootstrapServer server;
	private TestHttp http;

	@BeforeEach
	void bind() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		http = new TestHttp(server.address());
	}

	@AfterEach
	void dispose() {
		server.disposeNow();
	}

	@Test
	void servesCpAwareRegistrationsAndLookups() {
		// dp 1 x cp 2 x tp 2 x pp 1, as today's SGLang registers: no role, CP fields, dtype.
		int registered = 0;
		for (int c = 0; c < 2; c++) {
			for (int t = 0; t < 2; t++) {
				assertThat(http.get(info()).body()).isEqualTo("Prefill server not fully registered yet ("
						+ registered + " workers registered).");
				assertThat(http.get(lookup(0, 0, 0, 0)).statusCode()).isEqualTo(503);
				assertThat(http.put("/route", registration(c, t, null)).body()).isEqualTo("OK");
				registered++;
			}
		}
		HttpResponse<String> info = http.get(info());
		assertThat(info.statusCode()).isEqualTo(200);
		assertThat(info.body()).isEqualTo("{\"attn_tp_size\": 2, \"attn_cp_size\": 2, \"dp_size\": 1, \"pp_size\": 1, "
				+ "\"page_size\": 64, \"kv_cache_dtype\": \"fp8_e4m3\", \"follow_bootstrap_room\": true, "
				+ "\"enable_dsa_cache_layer_split\": false, \"prefill_http_port\": null, "
				+ DECODE_SCRATCH_NULLS);
		for (int c = 0; c < 2; c++) {
			for (int t = 0; t < 2; t++) {
				assertThat(http.get(lookup(0, c, t, 0)).body())
						.isEqualTo("{\"rank_ip\": \"fd00::" + c + "\", \"rank_port\": " + (6000 + c * 10 + t) + "}");
			}
		}
		assertThat(http.get(lookup(0, 1, 5, 0)).statusCode()).isEqualTo(404);
		assertThat(http.get(lookup(0, 1, 5, 0)).body())
				.isEqualTo("Bootstrap info not found for dp_rank=0 cp_rank=1 tp_rank=5 pp_rank=0");
		// The older protocol reads the same table at CP rank 0.
		assertThat(http.get("/route?engine_rank=1&target_dp_group=0&target_pp_rank=0").body())
				.isEqualTo("{\"rank_ip\": \"fd00::0\", \"rank_port\": 6001}");
		assertThat(http.get("/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1").body())
				.isEqualTo("{\"prefill_attn_tp_size\": 2, \"prefill_dp_size\": 1, \"prefill_pp_size\": 1, "
						+ "\"prefill_page_size\": 64}");
	}

	@Test
	void answersTheNewestFieldsAndPassesUnknownInstanceFieldsOfTheFirstRegistrationThrough() {
		// A later SGLang's registration: two fields this server knows, and new ones it does not.
		String first = "{\"attn_tp_size\": 2, \"attn_tp_rank\": 0, \"attn_cp_size\": 1, \"attn_cp_rank\": 0, "
				+ "\"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 1, "
				+ "\"system_dp_rank\": 0, \"rank_ip\": \"10.0.0.1\", \"rank_port\": 6000, \"page_size\": 1, "
				+ "\"kv_cache_dtype\": \"auto\", \"load_balance_method\": \"follow_bootstrap_room\", "
				+ "\"enable_dsa_cache_layer_split\": true, \"prefill_http_port\": 30000, "
				+ "\"attn_dcp_size\": 2, \"kv_layout\": \"nhd\\u00e9\", \"ratio\": 0.5, \"flags\": [1, null, false], "
				+ "\"nested\": {\"k\": \"v\"}, \"nothing\": null, \"attn_dcp_rank\": 0, \"rank_nic\": \"mlx5_0\", "
				+ "\"dp_size\": 7}";
		String second = first.replace("\"attn_tp_rank\": 0", "\"attn_tp_rank\": 1")
				.replace("\"rank_port\": 6000", "\"rank_port\": 6001")
				.replace("\"attn_dcp_size\": 2", "\"attn_dcp_size\": 4")
				.replace("\"enable_dsa_cache_layer_split\": true", "\"enable_dsa_cache_layer_split\": false")
				.replace("\"prefill_http_port\": 30000", "\"prefill_http_port\": 31000");
		assertThat(http.put("/route", first).body()).isEqualTo("OK");
		assertThat(http.put("/route", second).body()).isEqualTo("OK");
		HttpResponse<String> info = http.get(info());
		assertThat(info.statusCode()).isEqualTo(200);
		assertThat(info.body()).isEqualTo("{\"attn_tp_size\": 2, \"attn_cp_size\": 1, \"dp_size\": 1, \"pp_size\": 1, "
				+ "\"page_size\": 1, \"kv_cache_dtype\": \"auto\", \"follow_bootstrap_room\": true, "
				+ "\"enable_dsa_cache_layer_split\": true, \"prefill_http_port\": 30000, "
				+ "\"attn_dcp_size\": 2, \"kv_layout\": \"nhd\\u00e9\", \"ratio\": 0.5, \"flags\": [1, null, false], "
				+ "\"nested\": {\"k\": \"v\"}, \"nothing\": null, "
				+ DECODE_SCRATCH_NULLS);
		// The older form's answer stays as it was.
		assertThat(http.get("/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1").body())
				.isEqualTo("{\"prefill_attn_tp_size\": 2, \"prefill_dp_size\": 1, \"prefill_pp_size\": 1, "
						+ "\"prefill_page_size\": 1}");
	}

	@Test
	void reportsFollowBootstrapRoomFromTheLoadBalanceMethod() {
		http.put("/route", registration(0, 0, "round_robin").replace("\"attn_cp_size\": 2", "\"attn_cp_size\": 1")
				.replace("\"attn_tp_size\": 2", "\"attn_tp_size\": 1"));
		assertThat(http.get(info()).body()).contains("\"follow_bootstrap_room\": false");
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = {
			"/route?prefill_dp_rank=0&target_tp_rank=0&target_pp_rank=0|prefill_cp_rank",
			"/route?prefill_dp_rank=0&prefill_cp_rank=0&target_pp_rank=0|target_tp_rank",
			"/route?prefill_cp_rank=0&target_tp_rank=0&target_pp_rank=0|prefill_dp_rank",
			"/route?prefill_dp_rank=0&prefill_cp_rank=0&target_tp_rank=0&target_pp_rank=|target_pp_rank",
			"/route?prefill_dp_rank=0&prefill_cp_rank=z&target_tp_rank=0&target_pp_rank=0|prefill_cp_rank" })
	void rejectsBadLookupParametersNamingThem(String pathAndQuery, String parameter) {
		HttpResponse<String> response = http.get(pathAndQuery);
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(response.body()).startsWith(parameter + " : ");
	}

	@Test
	void registersAndQueriesRoomDpRanks() {
		assertThat(http.post("/register_dp_rank", "{\"bootstrap_room\": 9223372036854775807, \"dp_rank\": 3}")
				.body()).isEqualTo("OK");
		assertThat(http.post("/register_dp_rank", "{\"bootstrap_room\": 17, \"dp_rank\": 0}").body())
				.isEqualTo("OK");
		assertThat(http.post("/register_dp_rank", "{\"bootstrap_room\": 17, \"dp_rank\": 1}").body())
				.isEqualTo("OK");
		HttpResponse<String> known = http.post("/query_dp_ranks",
				"{\"bootstrap_rooms\": [17, 5, 9223372036854775807]}");
		assertThat(known.statusCode()).isEqualTo(200);
		assertThat(known.body()).isEqualTo("{\"17\": 1, \"9223372036854775807\": 3}");
		assertThat(http.post("/query_dp_ranks", "{\"bootstrap_rooms\": []}").body()).isEqualTo("{}");
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = { "/register_dp_rank|{\"dp_rank\": 0}|bootstrap_room",
			"/register_dp_rank|{\"bootstrap_room\": -1, \"dp_rank\": 0}|bootstrap_room",
			"/register_dp_rank|{\"bootstrap_room\": 9223372036854775808, \"dp_rank\": 0}|bootstrap_room",
			"/register_dp_rank|{\"bootstrap_room\": \"7\", \"dp_rank\": 0}|bootstrap_room",
			"/register_dp_rank|{\"bootstrap_room\": 7}|dp_rank",
			"/register_dp_rank|{\"bootstrap_room\": 7, \"dp_rank\": -2}|dp_rank",
			"/query_dp_ranks|{}|bootstrap_rooms", "/query_dp_ranks|{\"bootstrap_rooms\": 5}|bootstrap_rooms",
			"/query_dp_ranks|{\"bootstrap_rooms\": [1, \"x\"]}|bootstrap_rooms[1]",
			"/query_dp_ranks|[1]|request body" })
	void rejectsBadRoomBodiesNamingTheField(String path, String body, String field) {
		HttpResponse<String> response = http.post(path, body);
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(response.body()).startsWith(field + " : ");
	}

	@Test
	void answersOtherMethodsOnRoomEndpointsWith405() {
		for (String path : new String[] { "/register_dp_rank", "/query_dp_ranks" }) {
			HttpResponse<String> response = http.get(path);
			assertThat(response.statusCode()).isEqualTo(405);
			assertThat(response.headers().firstValue("allow")).hasValue("POST");
		}
	}

	private static String info() {
		return lookup(-1, -1, -1, -1);
	}

	private static String lookup(int dp, int cp, int tp, int pp) {
		return "/route?prefill_dp_rank=" + dp + "&prefill_cp_rank=" + cp + "&target_tp_rank=" + tp
				+ "&target_pp_rank=" + pp;
	}

	private static String registration(int cpRank, int tpRank, String loadBalanceMethod) {
		return "{\"attn_tp_size\": 2, \"attn_tp_rank\": " + tpRank + ", \"attn_cp_size\": 2, \"attn_cp_rank\": "
				+ cpRank + ", \"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, \"pp_rank\": 0, "
				+ "\"system_dp_size\": 1, \"system_dp_rank\": 0, \"rank_ip\": \"fd00::" + cpRank + "\", "
				+ "\"rank_port\": " + (6000 + cpRank * 10 + tpRank) + ", \"page_size\": 64, "
				+ "\"kv_cache_dtype\": \"fp8_e4m3\""
				+ (loadBalanceMethod == null ? "" : ", \"load_balance_method\": \"" + loadBalanceMethod + "\"")
				+ "}";
	}
}
