package io.kvferry.bootstrap.server;

import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;

import io.kvferry.bootstrap.server.BootstrapServerMain.Configured;
import io.kvferry.bootstrap.server.RawHttp.Mode;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Micrometer metrics and the Prometheus {@code GET /metrics} scrape, embedded and standalone. */
class BootstrapServerMetricsTest {

	private static final String REGISTRATION = TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 5000);
	private static final String PARALLEL_INFO = "/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1";
	private static final String LOOKUP = "/route?engine_rank=0&target_dp_group=0&target_pp_rank=0";

	private DisposableBootstrapServer server;
	private MeterRegistry registry;

	@AfterEach
	void dispose() {
		if (server != null) {
			server.disposeNow();
		}
		if (registry != null) {
			registry.close();
		}
	}

	private TestHttp bind(MeterRegistry meters) {
		registry = meters;
		server = BootstrapServer.create().host("127.0.0.1").port(0).metrics(meters).bindNow();
		return new TestHttp(server.address());
	}

	@Test
	void countsRequestsRegistrationsAndLookupsAndServesThemToPrometheus() {
		TestHttp http = bind(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
		http.get("/health");
		http.get("/health");
		assertThat(http.get(PARALLEL_INFO).statusCode()).isEqualTo(503);
		assertThat(http.put("/route", REGISTRATION).statusCode()).isEqualTo(200);
		assertThat(http.put("/route", REGISTRATION).statusCode()).isEqualTo(200);
		assertThat(http.put("/route", "{\"role\": 1}").statusCode()).isEqualTo(400);
		assertThat(http.get(PARALLEL_INFO).statusCode()).isEqualTo(200);
		assertThat(http.get(LOOKUP).statusCode()).isEqualTo(200);
		assertThat(http.get("/route?engine_rank=0&target_dp_group=0&target_pp_rank=7").statusCode()).isEqualTo(404);
		assertThat(http.post("/register_dp_rank", "{\"bootstrap_room\": 7, \"dp_rank\": 0}").statusCode())
				.isEqualTo(200);
		assertThat(http.post("/query_dp_ranks", "{\"bootstrap_rooms\": [7, 8, 9]}").statusCode()).isEqualTo(200);
		assertThat(http.send("DELETE", "/route", BodyPublishers.noBody()).statusCode()).isEqualTo(405);
		assertThat(http.get("/nope/" + "x".repeat(50)).statusCode()).isEqualTo(404);

		HttpResponse<String> scrape = http.get("/metrics");
		assertThat(scrape.statusCode()).isEqualTo(200);
		assertThat(scrape.headers().firstValue("content-type")).hasValue("text/plain; version=0.0.4; charset=utf-8");
		assertThat(scrape.body()).contains(
				"kvferry_bootstrap_requests_total{method=\"GET\",route=\"/health\",status=\"200\"} 2.0",
				"kvferry_bootstrap_requests_total{method=\"PUT\",route=\"/route\",status=\"200\"} 2.0",
				"kvferry_bootstrap_requests_total{method=\"PUT\",route=\"/route\",status=\"400\"} 1.0",
				"kvferry_bootstrap_requests_total{method=\"GET\",route=\"/route\",status=\"503\"} 1.0",
				"kvferry_bootstrap_requests_total{method=\"DELETE\",route=\"/route\",status=\"405\"} 1.0",
				"kvferry_bootstrap_requests_total{method=\"GET\",route=\"other\",status=\"404\"} 1.0",
				"kvferry_bootstrap_registrations_total{outcome=\"added\"} 1.0",
				"kvferry_bootstrap_registrations_total{outcome=\"replaced\"} 1.0",
				"kvferry_bootstrap_lookups_total{outcome=\"not_ready\",type=\"parallel_info\"} 1.0",
				"kvferry_bootstrap_lookups_total{outcome=\"found\",type=\"parallel_info\"} 1.0",
				"kvferry_bootstrap_lookups_total{outcome=\"found\",type=\"rank\"} 1.0",
				"kvferry_bootstrap_lookups_total{outcome=\"not_found\",type=\"rank\"} 1.0",
				"kvferry_bootstrap_dp_rank_registrations_total 1.0",
				"kvferry_bootstrap_dp_rank_lookups_total{outcome=\"found\"} 1.0",
				"kvferry_bootstrap_dp_rank_lookups_total{outcome=\"not_found\"} 2.0",
				"kvferry_bootstrap_registered_ranks 1.0",
				"kvferry_bootstrap_expected_ranks 1.0",
				"kvferry_bootstrap_dp_rank_entries 1.0",
				"# HELP kvferry_bootstrap_requests_total Requests answered, by route, method and status");
		// The scrape itself shows up in the next one.
		assertThat(http.get("/metrics").body())
				.contains("kvferry_bootstrap_requests_total{method=\"GET\",route=\"/metrics\",status=\"200\"} 1.0");
	}

	@Test
	void countsJunkMethodsUnderOneTagValueAndUnansweredRequestsAsClosed() {
		TestHttp http = bind(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
		for (String method : new String[] { "FOO", "BAR", "get" }) {
			RawHttp.exchange(server.address().port(), (method + " /health HTTP/1.1\r\nHost: x\r\nConnection: close"
					+ "\r\n\r\n").getBytes(StandardCharsets.US_ASCII), Mode.WHOLE);
		}
		assertThat(http.get("/metrics").body())
				.contains("kvferry_bootstrap_requests_total{method=\"other\",route=\"/health\",status=\"405\"} 3.0");
	}

	@Test
	void answersHeadAndRefusesOtherMethodsOnMetrics() {
		TestHttp http = bind(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
		HttpResponse<String> head = http.send("HEAD", "/metrics", BodyPublishers.noBody());
		assertThat(head.statusCode()).isEqualTo(200);
		assertThat(head.body()).isEmpty();
		HttpResponse<String> post = http.post("/metrics", "{}");
		assertThat(post.statusCode()).isEqualTo(405);
		assertThat(post.headers().firstValue("allow")).hasValue("GET, HEAD");
	}

	@Test
	void recordsIntoAnyRegistryButServesOnlyPrometheusOnes() {
		SimpleMeterRegistry simple = new SimpleMeterRegistry();
		TestHttp http = bind(simple);
		assertThat(http.get("/health").statusCode()).isEqualTo(200);
		assertThat(http.get("/metrics").statusCode()).isEqualTo(404);
		assertThat(simple.get("kvferry.bootstrap.requests").tags("route", "/health", "method", "GET", "status", "200")
				.counter().count()).isEqualTo(1.0);
		assertThat(simple.get("kvferry.bootstrap.registered.ranks").gauge().value()).isZero();
	}

	@Test
	void servesAPrometheusRegistryInsideAComposite() {
		CompositeMeterRegistry composite = new CompositeMeterRegistry();
		PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
		composite.add(new SimpleMeterRegistry());
		composite.add(prometheus);
		TestHttp http = bind(composite);
		http.get("/health");
		assertThat(http.get("/metrics").body())
				.contains("kvferry_bootstrap_requests_total{method=\"GET\",route=\"/health\",status=\"200\"} 1.0");
		prometheus.close();
	}

	@Test
	void withoutARegistryThereIsNoMetricsRoute() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		TestHttp http = new TestHttp(server.address());
		assertThat(http.get("/metrics").statusCode()).isEqualTo(404);
		assertThat(BootstrapServer.create().hasMetrics()).isFalse();
		assertThatThrownBy(() -> BootstrapServer.create().metrics(null)).hasMessage("registry");
	}

	@Test
	void removesItsGaugesWhenDisposedAndKeepsItsCounters() {
		SimpleMeterRegistry simple = new SimpleMeterRegistry();
		TestHttp http = bind(simple);
		http.put("/route", REGISTRATION);
		assertThat(simple.get("kvferry.bootstrap.registered.ranks").gauge().value()).isEqualTo(1.0);
		server.disposeNow();
		server = null;
		assertThat(simple.find("kvferry.bootstrap.registered.ranks").gauge()).isNull();
		assertThat(simple.find("kvferry.bootstrap.expected.ranks").gauge()).isNull();
		assertThat(simple.find("kvferry.bootstrap.dp.rank.entries").gauge()).isNull();
		assertThat(simple.get("kvferry.bootstrap.registrations").tags("outcome", "added").counter().count())
				.isEqualTo(1.0);
	}

	@Test
	void theStandaloneServerServesMetricsByDefaultJvmOnesIncluded() {
		Configured configured = BootstrapServerMain.configuration("--host", "127.0.0.1", "--port", "0");
		try {
			assertThat(configured.server().hasMetrics()).isTrue();
			server = configured.server().bindNow();
			TestHttp http = new TestHttp(server.address());
			http.get("/health");
			assertThat(http.get("/metrics").body()).contains(
					"kvferry_bootstrap_requests_total{method=\"GET\",route=\"/health\",status=\"200\"} 1.0",
					"jvm_memory_used_bytes", "jvm_threads_live_threads", "jvm_gc_", "process_uptime_seconds",
					"system_cpu_count", "process_files_open_files");
		}
		finally {
			configured.closeMetrics().run();
		}
	}

	@Test
	void theStandaloneServerTurnsMetricsOffOnRequest() {
		Configured configured = BootstrapServerMain.configuration("--no-metrics");
		try {
			assertThat(configured.server().hasMetrics()).isFalse();
		}
		finally {
			configured.closeMetrics().run();
		}
	}
}
