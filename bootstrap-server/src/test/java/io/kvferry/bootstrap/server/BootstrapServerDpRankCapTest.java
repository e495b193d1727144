package io.kvferry.bootstrap.server;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The cap on the room → DP rank table, over real HTTP: a new room beyond it gets a 503 naming the cap, held rooms keep
 * being answered and rewritten, refusals are counted, and the table never holds more than the cap.
 */
class BootstrapServerDpRankCapTest {

	private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
	private DisposableBootstrapServer server;

	@AfterEach
	void dispose() {
		if (server != null) {
			server.disposeNow();
		}
		registry.close();
	}

	private TestHttp bind(int maxDpRankEntries) {
		server = BootstrapServer.create().host("127.0.0.1").port(0).maxDpRankEntries(maxDpRankEntries)
				.metrics(registry).bindNow();
		return new TestHttp(server.address());
	}

	@Test
	void aNewRoomBeyondTheCapGets503NamingItWhileHeldRoomsAreAnsweredAndRewritten() {
		TestHttp http = bind(3);
		for (int room = 1; room <= 3; room++) {
			assertThat(http.post("/register_dp_rank", dpRank(room, room % 2)).body()).isEqualTo("OK");
		}

		HttpResponse<String> refused = http.post("/register_dp_rank", dpRank(4, 0));
		assertThat(refused.statusCode()).isEqualTo(503);
		assertThat(refused.headers().firstValue("content-type")).hasValue("text/plain; charset=utf-8");
		assertThat(refused.body()).isEqualTo("Room to DP rank table full: bootstrap_room 4 not stored, 3 rooms held "
				+ "(the cap; entries expire 120 s after they are written). Raise it with --max-dp-rank-entries "
				+ "(BootstrapServer.maxDpRankEntries).");

		assertThat(http.post("/query_dp_ranks", "{\"bootstrap_rooms\": [1, 2, 3, 4]}").body())
				.isEqualTo("{\"1\": 1, \"2\": 0, \"3\": 1}");
		assertThat(http.post("/register_dp_rank", dpRank(2, 5)).statusCode()).as("rewriting a held room")
				.isEqualTo(200);
		assertThat(http.post("/query_dp_ranks", "{\"bootstrap_rooms\": [2]}").body()).isEqualTo("{\"2\": 5}");

		assertThat(http.get("/metrics").body()).contains(
				"kvferry_bootstrap_dp_rank_refusals_total 1.0",
				"kvferry_bootstrap_dp_rank_registrations_total 4.0",
				"kvferry_bootstrap_dp_rank_entries 3.0",
				"kvferry_bootstrap_requests_total{method=\"POST\",route=\"/register_dp_rank\",status=\"503\"} 1.0");
	}

	@Test
	void aFloodOfNewRoomsStoresExactlyTheCapAndRefusesTheRest() throws Exception {
		int cap = 20;
		int rooms = 200;
		TestHttp http = bind(cap);
		List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
		for (int room = 0; room < rooms; room++) {
			answers.add(http.postAsync("/register_dp_rank", dpRank(1000 + room, 1)));
		}
		CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new))
				.get(TestHttp.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
		int stored = 0;
		StringBuilder query = new StringBuilder("{\"bootstrap_rooms\": [");
		for (int room = 0; room < rooms; room++) {
			HttpResponse<String> answer = answers.get(room).join();
			assertThat(answer.statusCode()).isIn(200, 503);
			if (answer.statusCode() == 200) {
				stored++;
				query.append(stored == 1 ? "" : ", ").append(1000 + room);
			}
		}
		assertThat(stored).isEqualTo(cap);
		assertThat(registry.get("kvferry.bootstrap.dp.rank.entries").gauge().value()).isEqualTo(cap);
		assertThat(registry.get("kvferry.bootstrap.dp.rank.refusals").counter().count()).isEqualTo(rooms - cap);
		// Every stored room is answered.
		String known = http.post("/query_dp_ranks", query.append("]}").toString()).body();
		assertThat(known.split(": 1")).hasSize(cap + 1);
	}

	@Test
	void theCapIsValidatedAndDefaultsToOneHundredThousand() {
		assertThat(BootstrapServer.create().maxDpRankEntries()).isEqualTo(100_000);
		assertThat(BootstrapServer.create().maxDpRankEntries(7).maxDpRankEntries()).isEqualTo(7);
		assertThatThrownBy(() -> BootstrapServer.create().maxDpRankEntries(0))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maxDpRankEntries : 0 (expected: >= 1)");
	}

	private static String dpRank(long room, int dpRank) {
		return "{\"bootstrap_room\": " + room + ", \"dp_rank\": " + dpRank + "}";
	}
}
