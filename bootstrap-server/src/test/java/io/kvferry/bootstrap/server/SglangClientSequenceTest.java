package io.kvferry.bootstrap.server;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.PythonRequests.Answer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The server driven as today's SGLang drives it: for each topology, the requests a prefill instance's ranks and a
 * decode instance's ranks send, in their order, with their bodies and over their connections (python-requests on the
 * wire, {@link PythonRequests}), each answer compared, status, content type and body, with what SGLang's own
 * bootstrap server answers ({@code CommonKVBootstrapServer}; the expected bodies follow from its code and are written
 * out below).
 * <p>
 * Who sends what: every prefill rank registers once at start-up ({@code CommonKVManager.register_to_bootstrap},
 * {@code PUT /route}, a new connection); decode asks for the parallel info until it is ready
 * ({@code try_ensure_parallel_info}, a new connection each time), then, per bootstrap key, asks each target rank's
 * endpoint ({@code _get_bootstrap_info_from_server}: for each CP rank, each TP rank, PP ranks in reverse) and, when
 * the prefill does not follow the bootstrap room, the rooms' DP ranks ({@code query_prefill_dp_ranks}) on one
 * kept-alive session; prefill senders register a room's DP rank ({@code _register_prefill_dp_rank}, a new
 * connection); decode's heartbeat asks {@code /health} on its own session.
 */
class SglangClientSequenceTest {

	private static final String PARALLEL_INFO = "/route?prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1"
			+ "&target_pp_rank=-1";

	private static final String TEXT = "text/plain; charset=utf-8";
	private static final String JSON = "application/json; charset=utf-8";

	/** How every parallel-info answer ends: the decode-side fields of SGLang's {@code PrefillServerInfo}, null. */
	private static final String SCRATCH_NULLS = "\"target_tp_rank\": null, \"target_tp_ranks\": null, "
			+ "\"target_cp_ranks\": null, \"target_pp_ranks\": null, \"required_dst_info_num\": null, "
			+ "\"required_prefill_response_num\": null}";

	/**
	 * One registration exactly as a rank sends it: system DP rank 1, attention TP rank 0 of {@code --tp 2 --dp 2}
	 * without DP attention. The others are built by {@link Instance#registration}, which makes this one too.
	 */
	private static final String SYSTEM_DP_RANK_1_TP_0 = "{\"attn_tp_size\": 2, \"attn_tp_rank\": 0, "
			+ "\"attn_cp_size\": 1, \"attn_cp_rank\": 0, \"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, "
			+ "\"pp_rank\": 0, \"system_dp_size\": 2, \"system_dp_rank\": 1, \"rank_ip\": \"192.168.0.11\", "
			+ "\"rank_port\": 41010, \"page_size\": 64, \"kv_cache_dtype\": \"auto\", "
			+ "\"load_balance_method\": \"round_robin\", \"enable_dsa_cache_layer_split\": false, "
			+ "\"prefill_http_port\": 30000}";

	private DisposableBootstrapServer server;
	/** Module-level {@code requests.put/get/post}: one connection per call. */
	private PythonRequests fresh;
	/** Decode's bootstrap session: route look-ups and {@code /query_dp_ranks}. */
	private PythonRequests lookups;
	/** Decode's heartbeat session. */
	private PythonRequests heartbeat;

	@AfterEach
	void dispose() throws IOException {
		lookups.close();
		heartbeat.close();
		server.disposeNow();
	}

	/** Binds on {@code host}, which the clients then name as SGLang's do ({@code Host: [::1]:port}). */
	private void bind(String host) {
		server = BootstrapServer.create().host(host).port(0).bindNow();
		HostPort address = new HostPort(host, server.address().port());
		fresh = PythonRequests.fresh(address);
		lookups = PythonRequests.session(address);
		heartbeat = PythonRequests.session(address);
	}

	/**
	 * A prefill instance's side of the registration: what every rank sends alike.
	 *
	 * @param attnTpSize attention TP size (TP / attention DP / CP)
	 * @param attnCpSize attention CP size
	 * @param attnDpSize attention DP size (the DP size with DP attention, else 1)
	 * @param ppSize pipeline size
	 * @param systemDpSize the DP size without DP attention, else 1
	 * @param kvCacheDtype {@code --kv-cache-dtype}
	 * @param loadBalanceMethod the prefill's resolved {@code --load-balance-method}
	 * @param dsaLayerSplit {@code enable_dsa_cache_layer_split}
	 */
	private record Instance(int attnTpSize, int attnCpSize, int attnDpSize, int ppSize, int systemDpSize,
			String kvCacheDtype, String loadBalanceMethod, boolean dsaLayerSplit) {

		/** @return {@code register_to_bootstrap}'s payload, keys in its order, written as {@code json.dumps} does */
		String registration(int attnTpRank, int attnCpRank, int attnDpRank, int ppRank, int systemDpRank,
				String rankIp, int rankPort) {
			return "{\"attn_tp_size\": " + attnTpSize + ", \"attn_tp_rank\": " + attnTpRank + ", \"attn_cp_size\": "
					+ attnCpSize + ", \"attn_cp_rank\": " + attnCpRank + ", \"attn_dp_size\": " + attnDpSize
					+ ", \"attn_dp_rank\": " + attnDpRank + ", \"pp_size\": " + ppSize + ", \"pp_rank\": " + ppRank
					+ ", \"system_dp_size\": " + systemDpSize + ", \"system_dp_rank\": " + systemDpRank
					+ ", \"rank_ip\": \"" + rankIp + "\", \"rank_port\": " + rankPort + ", \"page_size\": 64"
					+ ", \"kv_cache_dtype\": \"" + kvCacheDtype + "\", \"load_balance_method\": \"" + loadBalanceMethod
					+ "\", \"enable_dsa_cache_layer_split\": " + dsaLayerSplit + ", \"prefill_http_port\": 30000}";
		}
	}

	@Test
	void systemDpWithRoundRobinDispatch() {
		bind("127.0.0.1");
		// Prefill --tp 2 --dp 2 without DP attention, --load-balance-method round_robin: system DP rank d, TP rank t.
		Instance prefill = new Instance(2, 1, 1, 1, 2, "auto", "round_robin", false);
		assertThat(prefill.registration(0, 0, 0, 0, 1, "192.168.0.11", 41010)).isEqualTo(SYSTEM_DP_RANK_1_TP_0);
		register(prefill.registration(0, 0, 0, 0, 0, "192.168.0.11", 41000));
		expect(fresh.get(PARALLEL_INFO), 503, TEXT, "Prefill server not fully registered yet (1 workers registered).");
		register(prefill.registration(1, 0, 0, 0, 0, "192.168.0.11", 41001));
		register(SYSTEM_DP_RANK_1_TP_0);
		register(prefill.registration(1, 0, 0, 0, 1, "192.168.0.11", 41011));

		expect(fresh.get(PARALLEL_INFO), 200, JSON, "{\"attn_tp_size\": 2, \"attn_cp_size\": 1, \"dp_size\": 2, "
				+ "\"pp_size\": 1, \"page_size\": 64, \"kv_cache_dtype\": \"auto\", \"follow_bootstrap_room\": false, "
				+ "\"enable_dsa_cache_layer_split\": false, \"prefill_http_port\": 30000, " + SCRATCH_NULLS);
		expect(heartbeat.get("/health"), 200, TEXT, "OK");

		// Prefill senders: dp_size > 1 and not following the room, so each registers its room. SGLang sends the
		// attention DP rank, which is 0 without DP attention, whichever system DP rank serves the room.
		expect(fresh.post("/register_dp_rank", "{\"bootstrap_room\": 1001, \"dp_rank\": 0}"), 200, TEXT, "OK");
		expect(fresh.post("/register_dp_rank", "{\"bootstrap_room\": 1002, \"dp_rank\": 0}"), 200, TEXT, "OK");
		// Decode asks for the rooms it waits on in one batch; a room nobody registered is left out.
		expect(lookups.post("/query_dp_ranks", "{\"bootstrap_rooms\": [1001, 1002, 1003]}"), 200, JSON,
				"{\"1001\": 0, \"1002\": 0}");
		// Decode --tp 2: engine rank e reads target_tp_rank e of prefill DP rank 0.
		expect(lookups.get(route(0, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"192.168.0.11\", \"rank_port\": 41000}");
		expect(lookups.get(route(0, 0, 1, 0)), 200, JSON, "{\"rank_ip\": \"192.168.0.11\", \"rank_port\": 41001}");
		// A request the router sent with disagg_prefill_dp_rank 1 reads system DP rank 1's group.
		expect(lookups.get(route(1, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"192.168.0.11\", \"rank_port\": 41010}");
		expect(lookups.get(route(1, 0, 1, 0)), 200, JSON, "{\"rank_ip\": \"192.168.0.11\", \"rank_port\": 41011}");
	}

	@Test
	void attentionDpWithMlaFollowingTheRoom() {
		bind("127.0.0.1");
		// Prefill --tp 4 --dp 2 --enable-dp-attention (MLA): TP rank r is attention DP rank r / 2, attention TP rank
		// r % 2; system_dp_size 1 and the scheduler's DP rank as system_dp_rank.
		Instance prefill = new Instance(2, 1, 2, 1, 1, "auto", "follow_bootstrap_room", false);
		for (int r = 0; r < 4; r++) {
			register(prefill.registration(r % 2, 0, r / 2, 0, r / 2, "10.1.0.5", 42000 + r));
		}
		expect(fresh.get(PARALLEL_INFO), 200, JSON, "{\"attn_tp_size\": 2, \"attn_cp_size\": 1, \"dp_size\": 2, "
				+ "\"pp_size\": 1, \"page_size\": 64, \"kv_cache_dtype\": \"auto\", \"follow_bootstrap_room\": true, "
				+ "\"enable_dsa_cache_layer_split\": false, \"prefill_http_port\": 30000, " + SCRATCH_NULLS);

		// Decode --tp 2 --dp 2 --enable-dp-attention: attention TP 1 < 2, MLA, so each decode rank reads both prefill
		// TP ranks (the first real, the second a dummy) of DP rank room % 2; no DP rank query.
		// Room 7: prefill DP rank 1.
		expect(lookups.get(route(1, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"10.1.0.5\", \"rank_port\": 42002}");
		expect(lookups.get(route(1, 0, 1, 0)), 200, JSON, "{\"rank_ip\": \"10.1.0.5\", \"rank_port\": 42003}");
		// Room 10: prefill DP rank 0.
		expect(lookups.get(route(0, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"10.1.0.5\", \"rank_port\": 42000}");
		expect(lookups.get(route(0, 0, 1, 0)), 200, JSON, "{\"rank_ip\": \"10.1.0.5\", \"rank_port\": 42001}");
		expect(heartbeat.get("/health"), 200, TEXT, "OK");
	}

	@Test
	void prefillContextParallelTwoWithAndWithoutAllCpRanksTransfer() {
		bind("127.0.0.1");
		// Prefill --tp 4 --attn-cp-size 2: ranks laid out (cp, tp), TP rank = cp * 2 + t; attention TP 2.
		Instance prefill = new Instance(2, 2, 1, 1, 1, "auto", "follow_bootstrap_room", false);
		register(prefill.registration(0, 0, 0, 0, 0, "10.2.0.7", 43000));
		register(prefill.registration(1, 0, 0, 0, 0, "10.2.0.7", 43001));
		register(prefill.registration(0, 1, 0, 0, 0, "10.2.0.7", 43010));
		// dp 1 x cp 2 x tp 2 x pp 1 = 4 ranks: not ready with 3, for look-ups either.
		expect(fresh.get(PARALLEL_INFO), 503, TEXT, "Prefill server not fully registered yet (3 workers registered).");
		expect(lookups.get(route(0, 0, 0, 0)), 503, TEXT,
				"Prefill server not fully registered yet (3 workers registered).");
		register(prefill.registration(1, 1, 0, 0, 0, "10.2.0.7", 43011));

		expect(fresh.get(PARALLEL_INFO), 200, JSON, "{\"attn_tp_size\": 2, \"attn_cp_size\": 2, \"dp_size\": 1, "
				+ "\"pp_size\": 1, \"page_size\": 64, \"kv_cache_dtype\": \"auto\", \"follow_bootstrap_room\": true, "
				+ "\"enable_dsa_cache_layer_split\": false, \"prefill_http_port\": 30000, " + SCRATCH_NULLS);

		// Decode --tp 2 (attention CP 1): by default only prefill CP rank 0 transfers, so engine rank e reads CP 0.
		expect(lookups.get(route(0, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"10.2.0.7\", \"rank_port\": 43000}");
		expect(lookups.get(route(0, 0, 1, 0)), 200, JSON, "{\"rank_ip\": \"10.2.0.7\", \"rank_port\": 43001}");
		// With SGLANG_DISAGGREGATION_ALL_CP_RANKS_TRANSFER=1 on decode, engine rank e reads both CP ranks.
		expect(lookups.get(route(0, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"10.2.0.7\", \"rank_port\": 43000}");
		expect(lookups.get(route(0, 1, 0, 0)), 200, JSON, "{\"rank_ip\": \"10.2.0.7\", \"rank_port\": 43010}");
		expect(lookups.get(route(0, 0, 1, 0)), 200, JSON, "{\"rank_ip\": \"10.2.0.7\", \"rank_port\": 43001}");
		expect(lookups.get(route(0, 1, 1, 0)), 200, JSON, "{\"rank_ip\": \"10.2.0.7\", \"rank_port\": 43011}");
	}

	@Test
	void dsaCacheLayerSplitAcrossContextParallelRanks() {
		bind("127.0.0.1");
		// Prefill of a DSA model (MLA), --tp 4 --attn-cp-size 2 with the DSA cache split by layer across CP ranks.
		Instance prefill = new Instance(2, 2, 1, 1, 1, "fp8_e4m3", "follow_bootstrap_room", true);
		for (int c = 0; c < 2; c++) {
			for (int t = 0; t < 2; t++) {
				register(prefill.registration(t, c, 0, 0, 0, "10.4.0.3", 45000 + 10 * c + t));
			}
		}
		expect(fresh.get(PARALLEL_INFO), 200, JSON, "{\"attn_tp_size\": 2, \"attn_cp_size\": 2, \"dp_size\": 1, "
				+ "\"pp_size\": 1, \"page_size\": 64, \"kv_cache_dtype\": \"fp8_e4m3\", "
				+ "\"follow_bootstrap_room\": true, \"enable_dsa_cache_layer_split\": true, "
				+ "\"prefill_http_port\": 30000, " + SCRATCH_NULLS);

		// Decode --tp 1 (MLA): the split makes it pull from every CP rank, and attention TP 1 < 2 from both TP ranks.
		expect(lookups.get(route(0, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"10.4.0.3\", \"rank_port\": 45000}");
		expect(lookups.get(route(0, 0, 1, 0)), 200, JSON, "{\"rank_ip\": \"10.4.0.3\", \"rank_port\": 45001}");
		expect(lookups.get(route(0, 1, 0, 0)), 200, JSON, "{\"rank_ip\": \"10.4.0.3\", \"rank_port\": 45010}");
		expect(lookups.get(route(0, 1, 1, 0)), 200, JSON, "{\"rank_ip\": \"10.4.0.3\", \"rank_port\": 45011}");
		expect(heartbeat.get("/health"), 200, TEXT, "OK");
	}

	@Test
	void pipelineParallelFourStages() {
		bind("127.0.0.1");
		// Prefill --pp-size 4 over four nodes, one stage each; registered in the order the nodes came up.
		Instance prefill = new Instance(1, 1, 1, 4, 1, "auto", "follow_bootstrap_room", false);
		for (int p : new int[] { 2, 0, 3, 1 }) {
			register(prefill.registration(0, 0, 0, p, 0, "10.3.0." + (10 + p), 44000 + p));
		}
		expect(fresh.get(PARALLEL_INFO), 200, JSON, "{\"attn_tp_size\": 1, \"attn_cp_size\": 1, \"dp_size\": 1, "
				+ "\"pp_size\": 4, \"page_size\": 64, \"kv_cache_dtype\": \"auto\", \"follow_bootstrap_room\": true, "
				+ "\"enable_dsa_cache_layer_split\": false, \"prefill_http_port\": 30000, " + SCRATCH_NULLS);

		// Decode --pp-size 1 reads every stage, the last first.
		expect(lookups.get(route(0, 0, 0, 3)), 200, JSON, "{\"rank_ip\": \"10.3.0.13\", \"rank_port\": 44003}");
		expect(lookups.get(route(0, 0, 0, 2)), 200, JSON, "{\"rank_ip\": \"10.3.0.12\", \"rank_port\": 44002}");
		expect(lookups.get(route(0, 0, 0, 1)), 200, JSON, "{\"rank_ip\": \"10.3.0.11\", \"rank_port\": 44001}");
		expect(lookups.get(route(0, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"10.3.0.10\", \"rank_port\": 44000}");
		// A stage the instance does not have: SGLang's 404 text, the query values as sent.
		expect(lookups.get(route(0, 0, 0, 4)), 404, TEXT,
				"Bootstrap info not found for dp_rank=0 cp_rank=0 tp_rank=0 pp_rank=4");
	}

	@Test
	void ipv6RankAddressesAndAnIpv6BootstrapAddress() throws UnknownHostException {
		bind("::1");
		assertThat(InetAddress.getByName(server.address().host())).isInstanceOf(Inet6Address.class);
		// Prefill --tp 2 --nnodes 2 on IPv6 hosts: ranks register to http://[::1]:port/route with their own address,
		// unbracketed.
		Instance prefill = new Instance(2, 1, 1, 1, 1, "auto", "follow_bootstrap_room", false);
		register(prefill.registration(0, 0, 0, 0, 0, "fd00:a:b::11", 46000));
		register(prefill.registration(1, 0, 0, 0, 0, "fd00:a:b::12", 46001));
		expect(fresh.get(PARALLEL_INFO), 200, JSON, "{\"attn_tp_size\": 2, \"attn_cp_size\": 1, \"dp_size\": 1, "
				+ "\"pp_size\": 1, \"page_size\": 64, \"kv_cache_dtype\": \"auto\", \"follow_bootstrap_room\": true, "
				+ "\"enable_dsa_cache_layer_split\": false, \"prefill_http_port\": 30000, " + SCRATCH_NULLS);
		expect(lookups.get(route(0, 0, 0, 0)), 200, JSON, "{\"rank_ip\": \"fd00:a:b::11\", \"rank_port\": 46000}");
		expect(lookups.get(route(0, 0, 1, 0)), 200, JSON, "{\"rank_ip\": \"fd00:a:b::12\", \"rank_port\": 46001}");
		expect(heartbeat.get("/health"), 200, TEXT, "OK");
	}

	/** {@code _get_bootstrap_info_from_server}'s query, parameters in its order. */
	private static String route(int dp, int cp, int tp, int pp) {
		return "/route?prefill_dp_rank=" + dp + "&prefill_cp_rank=" + cp + "&target_tp_rank=" + tp
				+ "&target_pp_rank=" + pp;
	}

	private void register(String body) {
		expect(fresh.put("/route", body), 200, TEXT, "OK");
	}

	private static void expect(Answer answer, int status, String contentType, String body) {
		assertThat(answer.body()).isEqualTo(body);
		assertThat(answer.status()).as(answer.body()).isEqualTo(status);
		assertThat(answer.contentType()).as(answer.body()).isEqualTo(contentType);
	}
}
