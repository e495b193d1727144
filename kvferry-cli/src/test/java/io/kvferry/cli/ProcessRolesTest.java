package io.kvferry.cli;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.test.Child;
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
		try (Child bootstrap = CliChild.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = startBootstrap(bootstrap);
			try (Child prefill = CliChild.start("prefill", args("prefill", "--bootstrap", address, "--host", "127.0.0.1",
					"--prefill-tp", "2", "--transport", "shm"))) {
				prefill.awaitLine("kvferry prefill: ready, 2 ranks", START);
				try (Child decode = CliChild.start("decode", args("decode", "--bootstrap", address, "--requests", "8",
						"--concurrency", "3", "--min-tokens", "16", "--max-tokens", "512", "--json", "--transport",
						"shm"))) {
					int status = decode.awaitExit(START);
					assertThat(status).as(decode.output() + prefill.output()).isZero();
					JsonNode j = JSON.readTree(decode.stdout());
					assertThat(j.get("verified").asBoolean()).isTrue();
					assertThat(j.get("requests").asInt()).isEqualTo(8);
					assertThat(j.get("completed").asInt()).isEqualTo(8);
					assertThat(j.get("failures").asInt()).isZero();
					assertThat(j.get("bytes").asLong()).isPositive();
					assertThat(j.get("transport").asText()).as("two processes of one host")
							.isEqualTo("shared memory (same host)");
					// Decode's side of every room: no wait for prefill's engine, which decode cannot tell apart.
					JsonNode phases = j.get("phases");
					assertThat(phases.properties()).as(decode.stdout()).extracting(Map.Entry::getKey)
							.containsExactly("bootstrap", "waiting_for_peer", "wire", "landing");
					for (JsonNode phase : phases) {
						assertThat(phase.get("rooms").asInt()).isEqualTo(8);
						assertThat(phase.get("p99_ms").asDouble()).isGreaterThanOrEqualTo(phase.get("p50_ms")
								.asDouble());
					}
					assertThat(phases.get("wire").get("p50_ms").asDouble()).as("bytes took time to land").isPositive();
				}
				// The table shows the same phases, one line each, after the latency lines.
				try (Child decode = CliChild.start("decode", args("decode", "--bootstrap", address, "--requests", "2",
						"--min-tokens", "16", "--max-tokens", "64", "--transport", "shm"))) {
					assertThat(decode.awaitExit(START)).as(decode.output() + prefill.output()).isZero();
					assertThat(decode.stdout()).contains("latency max", "OK: every byte matched")
							.containsPattern("(?m)^  latency max .*\\R  bootstrap +p50 ")
							.containsPattern("(?m)^  wire +p50 \\d+\\.\\d\\d ms, p99 \\d+\\.\\d\\d ms, 2 rooms$")
							.containsPattern("(?m)^  landing +p50 .*\\R  failures +0$");
				}
			}
		}
	}

	@Test
	void prefillAndDecodeWithDifferentKvLayoutsVerifyEveryRoomInDecodesLayout() throws Exception {
		// Prefill head-major, decode token-major: prefill re-lays as it sends, decode checks its own layout.
		try (Child bootstrap = CliChild.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = startBootstrap(bootstrap);
			try (Child prefill = CliChild.start("prefill", args("prefill", "--bootstrap", address, "--host",
					"127.0.0.1", "--prefill-kv-layout", "HND"))) {
				prefill.awaitLine("kvferry prefill: ready", START);
				prefill.awaitLine("  pools   \\d+ pages per rank, KV pages HND", START);
				try (Child decode = CliChild.start("decode", args("decode", "--bootstrap", address, "--requests", "6",
						"--min-tokens", "17", "--max-tokens", "300", "--decode-kv-layout", "NHD", "--json"))) {
					int status = decode.awaitExit(START);
					assertThat(status).as(decode.output() + prefill.output()).isZero();
					JsonNode j = JSON.readTree(decode.stdout());
					assertThat(j.get("verified").asBoolean()).isTrue();
					assertThat(j.get("completed").asInt()).isEqualTo(6);
				}
			}
		}
	}

	@Test
	void prefillAndDecodeWithDifferentPageSizesVerifyEveryRoom() throws Exception {
		// As docs/rooms.md shows them: prefill pages of one token, decode pages of 16.
		try (Child bootstrap = CliChild.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = startBootstrap(bootstrap);
			try (Child prefill = CliChild.start("prefill", "prefill", "--bootstrap", address, "--host", "127.0.0.1",
					"--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--page-size", "1")) {
				prefill.awaitLine("kvferry prefill: ready", START);
				try (Child decode = CliChild.start("decode", args("decode", "--bootstrap", address, "--requests", "6",
						"--min-tokens", "17", "--max-tokens", "300", "--json"))) {
					int status = decode.awaitExit(START);
					assertThat(status).as(decode.output() + prefill.output()).isZero();
					JsonNode j = JSON.readTree(decode.stdout());
					assertThat(j.get("verified").asBoolean()).isTrue();
					assertThat(j.get("completed").asInt()).isEqualTo(6);
				}
			}
		}
	}

	@Test
	void decodeThatReachesNoBootstrapServerCouldNotRunAndItsRoomsNameWhy() throws Exception {
		// A port that was free a moment ago and has no listener now.
		String nobody;
		try (ServerSocket s = new ServerSocket()) {
			s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
			nobody = "127.0.0.1:" + s.getLocalPort();
		}
		try (Child decode = CliChild.start("decode", args("decode", "--bootstrap", nobody, "--requests", "2",
				"--bootstrap-timeout", "3s", "--json"))) {
			int status = decode.awaitExit(START);
			// An unreachable bootstrap server is a command that could not run (3), not a room that ran and failed (1).
			assertThat(status).as(decode.output()).isEqualTo(KVFerryCli.EXIT_ERROR);
			assertThat(decode.stderr()).contains("kvferry decode: could not run: no room reached the prefill instance "
					+ nobody);
			// The rooms timed out looking the instance up: they name the look-up's last failure, not only the state.
			JsonNode j = JSON.readTree(decode.stdout());
			assertThat(j.get("failure_reasons").toString()).contains("timed out after 3s in KVPoll.BOOTSTRAPPING; the "
					+ "look-up of prefill instance " + nobody + " keeps failing: attempt ")
					.contains("cannot connect: connection refused by " + nobody);
		}
	}

	@Test
	void decodeEndsWithTheLostConnectionWhenPrefillDiesMidRun() throws Exception {
		try (Child bootstrap = CliChild.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = startBootstrap(bootstrap);
			// A pool of one room's pages makes prefill serve rooms one by one: decode always has rooms waiting.
			try (Child prefill = CliChild.start("prefill", args("prefill", "--bootstrap", address, "--host", "127.0.0.1",
					"--pool-tokens", "512", "--heartbeat-interval", "500ms", "--verbose"))) {
				prefill.awaitLine("kvferry prefill: ready", START);
				try (Child decode = CliChild.start("decode", args("decode", "--bootstrap", address, "--requests", "2000",
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
							.containsPattern("Lost connection with prefill|connection refused by");
					assertThat(decode.stderr()).contains("kvferry decode: failed: ")
							.containsPattern("Lost connection|connection refused by");
				}
			}
		}
	}

	@Test
	void prefillDrainsOnSigtermMidBatchAndDecodeLosesNoRoomWithoutAReason() throws Exception {
		drainPrefillMidBatch(Duration.ofSeconds(20), true, TransportOptions.TCP);
	}

	@Test
	void prefillDrainsOnSigtermMidBatchThroughSharedMemoryAndDecodeLosesNoRoomWithoutAReason() throws Exception {
		// Through a same-host ring decode writes a credit for every frame: the drain's notice and close still arrive.
		drainPrefillMidBatch(Duration.ofSeconds(20), false, TransportOptions.SHM);
	}

	@Test
	void pastItsDeadlinePrefillAbortsTheRoomsInFlightWithTheReasonAndStillExitsZero() throws Exception {
		// A deadline of zero aborts whatever prefill holds at once.
		drainPrefillMidBatch(Duration.ZERO, false, TransportOptions.TCP);
	}

	private void drainPrefillMidBatch(Duration deadline, boolean stopBootstrap, String transport) throws Exception {
		try (Child bootstrap = CliChild.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = startBootstrap(bootstrap);
			// A pool of one room's pages makes prefill serve rooms one by one: decode always has rooms waiting.
			try (Child prefill = CliChild.start("prefill", args("prefill", "--bootstrap", address, "--host", "127.0.0.1",
					"--pool-tokens", "512", "--drain-timeout", deadline.toSeconds() + "s", "--verbose", "--transport",
					transport))) {
				prefill.awaitLine("kvferry prefill: ready", START);
				try (Child decode = CliChild.start("decode", args("decode", "--bootstrap", address, "--requests", "2000",
						"--concurrency", "4", "--min-tokens", "16", "--max-tokens", "512", "--json", "--transport",
						transport))) {
					// Mid-batch: a few rooms served, decode keeps asking for more.
					for (int served = 0; served < 3; served++) {
						prefill.awaitLine("room \\d+: \\d+ pages", START);
					}
					long signalled = System.nanoTime();
					prefill.terminate();
					int prefillStatus = prefill.awaitExit(deadline.plusSeconds(15));
					Duration prefillTook = Duration.ofNanos(System.nanoTime() - signalled);
					int decodeStatus = decode.awaitExit(START);
					Duration decodeTook = Duration.ofNanos(System.nanoTime() - signalled);

					assertThat(prefillStatus).as(prefill.output()).isZero();
					// Within the deadline; a zero deadline leaves the time to close (bounded by the command).
					assertThat(prefillTook).as("prefill exits within its drain deadline")
							.isLessThan(deadline.isZero() ? Duration.ofSeconds(10) : deadline);
					Matcher drained = Pattern
							.compile("kvferry prefill: drained in (\\d+) ms; (\\d+) rooms aborted by the drain")
							.matcher(prefill.stdout());
					assertThat(drained.find()).as(prefill.output()).isTrue();
					Matcher inFlight = Pattern.compile("kvferry prefill: SIGTERM: draining, (\\d+) rooms in flight")
							.matcher(prefill.stdout());
					assertThat(inFlight.find()).as(prefill.output()).isTrue();

					JsonNode j = JSON.readTree(decode.stdout());
					int failures = j.get("failures").asInt();
					int completed = j.get("completed").asInt();
					assertThat(completed).as("rooms served before and during the drain").isPositive();
					assertThat(completed + failures + j.get("skipped").asInt()).isEqualTo(2000);
					// Every failed room has the draining rank's reason: none lost without one, none by a timeout.
					int explained = 0;
					for (JsonNode reason : j.get("failure_reasons")) {
						Matcher n = Pattern.compile("^(\\d+) rooms: ").matcher(reason.asText());
						// Refused while draining, or aborted at the deadline: either way the reason says it drained.
						assertThat(reason.asText()).as(decode.output()).containsPattern(
								"is draining and admits no new rooms|was draining and room N did not end within the "
										+ "drain deadline");
						explained += n.find() ? Integer.parseInt(n.group(1)) : 1;
					}
					assertThat(explained).as(decode.output()).isEqualTo(failures);
					assertThat(decodeStatus).as("decode stopped on the first refused room").isEqualTo(failures > 0
							? 1 : 0);
					System.out.printf("kvferry drain on SIGTERM: prefill had %s rooms in flight, drained in %s ms (%s "
							+ "aborted by the drain) and exited 0 after %d ms (deadline %d ms); decode: %d rooms "
							+ "verified, %d failed with the draining reason, %d not started, exited %d after %d ms%n",
							inFlight.group(1), drained.group(1), drained.group(2), prefillTook.toMillis(),
							deadline.toMillis(), completed, failures, j.get("skipped").asInt(), decodeStatus,
							decodeTook.toMillis());
				}
			}
			if (!stopBootstrap) {
				return;
			}
			long signalled = System.nanoTime();
			bootstrap.terminate();
			assertThat(bootstrap.awaitExit(Duration.ofSeconds(30))).as(bootstrap.output()).isZero();
			assertThat(bootstrap.stdout()).contains("kvferry bootstrap: SIGTERM, drained in ");
			System.out.printf("kvferry drain on SIGTERM: the bootstrap server exited 0 after %d ms%n",
					(System.nanoTime() - signalled) / 1_000_000);
		}
	}

	@Test
	void decodeStopsStartingRoomsOnSigtermFinishesThoseInFlightAndExitsZero() throws Exception {
		try (Child bootstrap = CliChild.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = startBootstrap(bootstrap);
			try (Child prefill = CliChild.start("prefill", args("prefill", "--bootstrap", address, "--host", "127.0.0.1",
					"--pool-tokens", "512", "--verbose"))) {
				prefill.awaitLine("kvferry prefill: ready", START);
				try (Child decode = CliChild.start("decode", args("decode", "--bootstrap", address, "--requests", "2000",
						"--concurrency", "4", "--min-tokens", "16", "--max-tokens", "512", "--drain-timeout", "20s",
						"--json"))) {
					prefill.awaitLine("room \\d+: \\d+ pages", START);
					long signalled = System.nanoTime();
					decode.terminate();
					int status = decode.awaitExit(Duration.ofSeconds(35));
					long took = (System.nanoTime() - signalled) / 1_000_000;
					assertThat(status).as(decode.output()).isZero();
					assertThat(decode.stderr()).contains("kvferry decode: SIGTERM: starting no new room");
					JsonNode j = JSON.readTree(decode.stdout());
					assertThat(j.get("failures").asInt()).as(decode.output()).isZero();
					assertThat(j.get("completed").asInt()).isPositive();
					assertThat(j.get("skipped").asInt()).isPositive();
					// As the exit status says: every room that ran matched, the rest were skipped by the signal.
					assertThat(j.get("verified").asBoolean()).as(decode.output()).isTrue();
					assertThat(j.get("stopped_by").asText()).isEqualTo("SIGTERM");
					System.out.printf("kvferry drain on SIGTERM: decode verified %d rooms, left %d unstarted and exited 0"
							+ " after %d ms%n", j.get("completed").asInt(), j.get("skipped").asInt(), took);
				}
			}
		}
	}
}
