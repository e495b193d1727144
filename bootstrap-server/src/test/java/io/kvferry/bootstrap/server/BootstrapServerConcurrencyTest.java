package io.kvferry.bootstrap.server;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Many prefill ranks registering at once, over real sockets, end with a consistent table. */
class BootstrapServerConcurrencyTest {

	private static final int DP = 4;
	private static final int TP = 8;
	private static final int PP = 2;
	private static final int ROUNDS = 3;

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
	void concurrentRegistrationsEndWithAConsistentTable() throws Exception {
		List<String> bodies = new ArrayList<>();
		for (int round = 0; round < ROUNDS; round++) {
			for (int d = 0; d < DP; d++) {
				for (int t = 0; t < TP; t++) {
					for (int p = 0; p < PP; p++) {
						bodies.add(TestHttp.registration(TP, t, DP, d, PP, p, "10.1." + d + "." + t, portOf(d, t, p)));
					}
				}
			}
		}
		Collections.shuffle(bodies, new Random(42));
		List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
		for (String body : bodies) {
			answers.add(http.putAsync("/route", body));
		}
		CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
		for (CompletableFuture<HttpResponse<String>> answer : answers) {
			assertThat(answer.get().statusCode()).as(answer.get().body()).isEqualTo(200);
		}

		assertThat(server.registeredCount()).isEqualTo(DP * TP * PP);
		assertThat(http.get("/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1").body())
				.isEqualTo("{\"prefill_attn_tp_size\": 8, \"prefill_dp_size\": 4, \"prefill_pp_size\": 2, "
						+ "\"prefill_page_size\": 16}");
		for (int d = 0; d < DP; d++) {
			for (int t = 0; t < TP; t++) {
				for (int p = 0; p < PP; p++) {
					assertThat(http.get("/route?engine_rank=" + t + "&target_dp_group=" + d + "&target_pp_rank=" + p)
							.body()).isEqualTo("{\"rank_ip\": \"10.1." + d + "." + t + "\", \"rank_port\": "
									+ portOf(d, t, p) + "}");
				}
			}
		}
	}

	private static int portOf(int d, int t, int p) {
		return 30000 + d * 100 + t * 10 + p;
	}
}
