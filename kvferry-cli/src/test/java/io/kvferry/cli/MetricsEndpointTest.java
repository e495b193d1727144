package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.KVMetricsRecorder;
import io.kvferry.transport.local.InMemoryKVTransport;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import org.junit.jupiter.api.Test;

class MetricsEndpointTest {

	@Test
	void servesEveryRanksMetricsForPrometheus() throws Exception {
		MetricsEndpoint endpoint = MetricsEndpoint.start("127.0.0.1", 0);
		// Rooms are recorded on the callback scheduler after they end: the scrape waits for both managers' records.
		KVMetricsRecorder inner = endpoint.recorder();
		CountDownLatch recorded = new CountDownLatch(2);
		KVMetricsRecorder recorder = new KVMetricsRecorder() {
			@Override
			public void roomOpened(String manager, DisaggregationMode mode) {
				inner.roomOpened(manager, mode);
			}

			@Override
			public void roomEnded(RoomEnded ended) {
				inner.roomEnded(ended);
				recorded.countDown();
			}
		};
		KVCluster c = KVCluster.builder().shape(new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0)).capacity(16, 4)
				.transport(InMemoryKVTransport.create()).bootstrapClient(new InMemoryBootstrap())
				.bootstrapAddress(new HostPort("127.0.0.1", 8998))
				.customize(spec -> spec.metricsRecorder(recorder)).startNow(Duration.ofSeconds(10));
		endpoint.bind(List.of(c.prefillManagers().get(0).get(0), c.decodeManagers().get(0)));
		try {
			assertThat(c.run(1, 20, 2, new Random(1)).block(Duration.ofSeconds(10)).ok()).isTrue();
			assertThat(recorded.await(10, TimeUnit.SECONDS)).as("both managers recorded the room").isTrue();
			HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
					URI.create("http://127.0.0.1:" + endpoint.port() + "/metrics")).timeout(Duration.ofSeconds(10))
					.build(), HttpResponse.BodyHandlers.ofString());
			assertThat(r.statusCode()).isEqualTo(200);
			assertThat(r.body()).contains("kvferry_bytes_sent_bytes_total{", "mode=\"prefill\"",
					"kvferry_room_duration_seconds", "kvferry_room_phase_seconds", "phase=\"wire\"",
					"kvferry_heartbeats_missed_total");
		}
		finally {
			endpoint.dispose();
			c.close().block(Duration.ofSeconds(10));
		}
	}
}
