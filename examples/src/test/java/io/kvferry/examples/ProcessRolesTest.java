package io.kvferry.examples;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/** The bootstrap, prefill and decode roles as separate JVMs on loopback, as on separate hosts. */
@Timeout(120)
class ProcessRolesTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START = Duration.ofSeconds(60);
	private static final String[] SHAPE = { "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--page-size",
			"16" };

	private static String[] args(String... parts) {
		List<String> all = new ArrayList<>(List.of(parts));
		all.addAll(List.of(SHAPE));
		return all.toArray(String[]::new);
	}

	private static String startBootstrap(Child bootstrap) throws InterruptedException {
		return bootstrap.awaitLine("kvferry bootstrap: listening on (\\S+)", START).group(1);
	}

	@Test
	void decodeVerifiesEveryRoomOfAPrefillProcessFoundThroughTheBootstrapProcess() throws Exception {
		try (Child bootstrap = Child.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = startBootstrap(bootstrap);
			try (Child prefill = Child.start("prefill", args("prefill", "--bootstrap", address, "--host", "127.0.0.1",
					"--prefill-tp", "2"))) {
				prefill.awaitLine("kvferry prefill: ready, 2 ranks", START);
				try (Child decode = Child.start("decode", args("decode", "--bootstrap", address, "--requests", "8",
						"--concurrency", "3", "--min-tokens", "16", "--max-tokens", "512", "--json"))) {
					int status = decode.awaitExit(START);
					assertThat(status).as(decode.output() + prefill.output()).isZero();
					JsonNode j = JSON.readTree(decode.stdout());
					assertThat(j.get("verified").asBoolean()).isTrue();
					assertThat(j.get("requests").asInt()).isEqualTo(8);
					assertThat(j.get("completed").asInt()).isEqualTo(8);
					assertThat(j.get("failures").asInt()).isZero();
					assertThat(j.get("bytes").asLong()).isPositive();
				}
			}
		}
	}

	@Test
	void decodeEndsWithTheLostConnectionWhenPrefillDiesMidRun() throws Exception {
		try (Child bootstrap = Child.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = startBootstrap(bootstrap);
			// A pool of one room's pages makes prefill serve rooms one by one: decode always has rooms waiting.
			try (Child prefill = Child.start("prefill", args("prefill", "--bootstrap", address, "--host", "127.0.0.1",
					"--pool-tokens", "512", "--heartbeat-interval", "500ms", "--verbose"))) {
				prefill.awaitLine("kvferry prefill: ready", START);
				try (Child decode = Child.start("decode", args("decode", "--bootstrap", address, "--requests", "2000",
						"--concurrency", "4", "--min-tokens", "16", "--max-tokens", "512", "--heartbeat-interval",
						"500ms", "--json"))) {
					prefill.awaitLine("room \\d+: \\d+ pages", START);
					long killed = System.nanoTime();
					prefill.kill();
					int status = decode.awaitExit(Duration.ofSeconds(30));
					Duration took = Duration.ofNanos(System.nanoTime() - killed);
					assertThat(status).as(decode.output()).isEqualTo(1);
					assertThat(took).isLessThan(Duration.ofSeconds(30));
					JsonNode j = JSON.readTree(decode.stdout());
					assertThat(j.get("verified").asBoolean()).isFalse();
					assertThat(j.get("failures").asInt()).isPositive();
					// Rooms in flight lose their connection; rooms that started resolving as it died find no listener.
					assertThat(j.get("failure_reasons").toString())
							.containsPattern("Lost connection with prefill|Connection refused");
					assertThat(decode.stderr()).contains("kvferry decode: failed: ")
							.containsPattern("Lost connection|Connection refused");
				}
			}
		}
	}
}
