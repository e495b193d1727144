package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.DecodeSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;
import reactor.core.scheduler.Schedulers;

/**
 * A small fleet grown from 2 to 4 instances a side (TP 2), with the HTTP bootstrap servers: the growth rules that do
 * not depend on the machine's speed hold.
 */
@Timeout(180)
class FleetBenchTest {

	private static final int TP = 2;
	private static final FleetBench.Settings SETTINGS = new FleetBench.Settings(TP, 200, 16, 40, null, null);

	@Test
	void nothingGrowsFasterThanTheFleet() {
		// Lazily started threads (scheduler workers, the HTTP client's loops) start here, not between the sizes.
		FleetBench.run(2, SETTINGS);
		FleetBench.Row small = FleetBench.run(2, SETTINGS);
		FleetBench.Row large = FleetBench.run(4, SETTINGS);

		for (FleetBench.Row r : new FleetBench.Row[] { small, large }) {
			int n = r.instances();
			assertThat(r.failures()).as(r.firstFailure()).isZero();
			assertThat(r.ranks()).isEqualTo(2 * n * TP);
			// Each decode rank reaches the one prefill rank of each instance it pulls from, on its stripes: a
			// connection count linear in the instances per rank, never one per room.
			assertThat(r.connections()).as("connections at %d a side", n)
					.isLessThanOrEqualTo(n * TP * n * DecodeSpec.DEFAULT_STRIPES);
			// First contact: each decode rank asks for an instance's sizes and its peer rank once.
			assertThat(r.firstContactLookups()).as("look-ups at first contact, %d a side", n)
					.isLessThanOrEqualTo(2L * n * TP * n);
			// After it, resolutions are cached: no registry request per room.
			assertThat(r.timedLookups()).as("look-ups during %d timed rooms, %d a side", r.rooms(), n).isZero();
			assertThat(r.registrations()).as("registrations, %d a side", n).isGreaterThanOrEqualTo((long) n * TP);
			// One HTTP bootstrap server per prefill instance, its threads its own.
			assertThat(r.serverThreads() % n).as("bootstrap server threads at %d a side", n).isZero();
		}
		// Twice the instances add 8 managers and 6 peers per decode rank; the threads without the per-instance
		// bootstrap servers stay within a small bound, not one per manager or peer. The callbacks' pool is left out of
		// that count: it grows with how many callbacks happened to run at once (its idle threads live a minute) up to a
		// cap set by the cores, whatever the fleet's size, and is held to that cap instead.
		int before = small.threads() - small.serverThreads() - callbackThreads(small);
		int after = large.threads() - large.serverThreads() - callbackThreads(large);
		assertThat(after - before).as("threads added by growing 2 -> 4 instances a side (%d -> %d; by pool %s -> %s)",
				before, after, small.pools(), large.pools()).isLessThanOrEqualTo(2);
		assertThat(callbackThreads(large)).as("callback threads at 4 a side")
				.isLessThanOrEqualTo(Schedulers.DEFAULT_BOUNDED_ELASTIC_SIZE);
		assertThat(large.serverThreads()).isEqualTo(2 * small.serverThreads());
	}

	/** @return the live threads of Reactor's bounded elastic scheduler, where the managers' callbacks run */
	private static int callbackThreads(FleetBench.Row r) {
		return r.pools().getOrDefault("boundedElastic-N", 0);
	}

	@Test
	void commandPrintsOneJsonRowPerSize() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("fleet", "--sizes", "1,2", "--tp", "2", "--rooms", "20", "--concurrency", "4",
				"--json");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		assertThat(j.get("verified").asBoolean()).isTrue();
		assertThat(j.get("registry").asText()).isEqualTo("http");
		JsonNode sizes = j.get("sizes");
		assertThat(sizes).hasSize(2);
		assertThat(sizes.get(1).get("instances").asInt()).isEqualTo(2);
		assertThat(sizes.get(1).get("ranks").asInt()).isEqualTo(8);
		assertThat(sizes.get(1).get("rooms_per_s").asLong()).isPositive();
		assertThat(sizes.get(1).get("server_requests").asLong()).isPositive();
		assertThat(sizes.get(1).get("lookups_per_room").asDouble()).isZero();
	}

	@Test
	void tpMustDivideTheModelsHeads() {
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(new StringWriter(), true));
		cl.setErr(new PrintWriter(err, true));
		assertThat(cl.execute("fleet", "--tp", "3")).isEqualTo(2);
		assertThat(err.toString()).contains("--tp : 3 (expected: a divisor of 8");
	}
}
