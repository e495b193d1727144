package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.transport.netty.IoMode;
import io.kvferry.transport.netty.LoopResources;
import io.kvferry.transport.ucx.Ucx;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;
import reactor.core.publisher.Mono;

/** Runs the benchmark in-process at toy sizes: checks what it reports, not how fast anything is. */
@Timeout(90)
class BenchCommandTest {

	@Test
	void aCloseThatFailsIsToldBesideTheFiguresInsteadOfEndingTheRun() {
		List<String> failures = new ArrayList<>();
		BenchCommand.close(Mono.empty(), "bulk over X", failures);
		assertThat(failures).isEmpty();
		BenchCommand.close(Mono.error(new IllegalStateException("Timeout on blocking read")), "many over Y", failures);
		assertThat(failures).containsExactly("many over Y: closing its ranks failed: Timeout on blocking read");
	}

	@Test
	void jsonReportsEveryFigureNextToItsBaseline() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--json", "--layers", "2", "--kv-heads", "2", "--head-dim", "64",
				"--bulk-mib", "2", "--rounds", "3", "--bulk-warmup", "2", "--small-iterations", "3", "--small-warmup",
				"0", "--same-host-warmup", "0", "--many-rooms", "20", "--many-warmup", "0", "--tiny-tokens", "64",
				"--tiny-rounds", "1", "--tiny-warmup", "1");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		JsonNode bulk = j.get("bulk");
		assertThat(bulk.get("gbps").asDouble()).isPositive();
		assertThat(bulk.get("baseline_gbps").asDouble()).isPositive();
		assertThat(bulk.get("ratio").asDouble()).isPositive();
		assertThat(bulk.get("bytes").asLong()).isEqualTo(2L << 20);
		assertThat(bulk.get("rounds").asInt()).isEqualTo(3);
		assertThat(bulk.get("stripes").asInt()).isEqualTo(2);
		assertThat(bulk.get("best_gbps").asDouble()).isGreaterThanOrEqualTo(bulk.get("gbps").asDouble());
		for (String key : new String[] { "baseline2_gbps", "ratio2", "wire_gbps", "wire_ratio" }) {
			assertThat(bulk.get(key).asDouble()).as(key).isPositive();
		}
		JsonNode sameHost = j.get("same_host");
		assertThat(sameHost.get("memcpy_gbps").asDouble()).isPositive();
		assertThat(sameHost.get("gbps").asDouble()).as(sameHost.toString()).isPositive();
		assertThat(sameHost.get("ratio").asDouble()).isPositive();
		for (String key : new String[] { "small", "small_8" }) {
			JsonNode small = j.get(key);
			assertThat(small.get("p50_us").asDouble()).as(key).isPositive();
			assertThat(small.get("baseline_p50_us").asDouble()).as(key).isPositive();
			assertThat(small.get("ratio").asDouble()).as(key).isPositive();
			// Decode completes before prefill hears of it, in every room, so in their medians too.
			assertThat(small.get("decode_p50_us").asDouble()).as(key).isPositive()
					.isLessThanOrEqualTo(small.get("p50_us").asDouble());
			assertThat(small.get("loop_baseline_p50_us").asDouble()).as(key).isPositive();
			assertThat(small.get("loop_ratio").asDouble()).as(key).isPositive();
			assertThat(small.get("decode_ratio_to_loop").asDouble()).as(key).isPositive();
			// Against the event loops' ping-pong that makes a room's three trips and nothing else.
			assertThat(small.get("loop_verdict_p50_us").asDouble()).as(key).isPositive();
			assertThat(small.get("ratio_to_loop_verdict").asDouble()).as(key).isPositive();
		}
		assertThat(j.get("small").get("pages").asInt()).isEqualTo(1);
		assertThat(j.get("small_8").get("pages").asInt()).isEqualTo(8);
		JsonNode many = j.get("many");
		assertThat(many.get("rooms").asInt()).isEqualTo(20);
		assertThat(many.get("failures").asInt()).isZero();
		assertThat(many.get("gbps").asDouble()).isPositive();
		assertThat(many.get("ratio_to_bulk").asDouble()).isPositive();
		assertThat(many.get("batches").asInt()).isEqualTo(3);
		assertThat(many.get("warmup_batches").asInt()).isGreaterThanOrEqualTo(2);
		assertThat(many.get("best_gbps").asDouble()).isGreaterThanOrEqualTo(many.get("gbps").asDouble());
		// Beside the frame pump, the event-loop room pump over the same buffers and over the rooms' own pages.
		for (String key : new String[] { "loop_verdict_laid_out_gbps", "loop_verdict_gbps", "loop_verdict_ratio",
				"ratio_to_loop_verdict" }) {
			assertThat(many.get(key).asDouble()).as(key).isPositive();
		}
		JsonNode tiny = j.get("tiny_pages");
		assertThat(tiny.get("failures").asInt()).isZero();
		assertThat(tiny.get("pieces").asInt()).isPositive();
		assertThat(tiny.get("tp2").get("ranks").asInt()).isEqualTo(2);
		for (String key : new String[] { "gbps", "pump_gbps", "ratio_to_pump", "ratio_to_bulk", "loop_verdict_gbps",
				"loop_verdict_ratio", "ratio_to_loop_verdict" }) {
			assertThat(tiny.get(key).isNumber()).as(key).isTrue();
			assertThat(tiny.get("tp2").get(key).isNumber()).as(key).isTrue();
		}
		// Every comparison says how its interleaved rounds agreed, and the run lists those it cannot vouch for.
		assertSpread(bulk.get("ratio_spread"), 3);
		assertSpread(bulk.get("ratio2_spread"), 3);
		assertSpread(many.get("ratio_spread"), 3);
		assertSpread(many.get("loop_verdict_ratio_spread"), 3);
		assertSpread(many.get("ratio_to_loop_verdict_spread"), 3);
		assertSpread(tiny.get("ratio_to_pump_spread"), 1);
		assertSpread(tiny.get("tp2").get("ratio_to_pump_spread"), 1);
		assertSpread(tiny.get("ratio_to_loop_verdict_spread"), 1);
		assertSpread(tiny.get("tp2").get("loop_verdict_ratio_spread"), 1);
		assertSpread(j.get("small").get("ratio_spread"), 3);
		assertSpread(j.get("small").get("decode_ratio_to_loop_spread"), 3);
		assertSpread(j.get("small").get("ratio_to_loop_verdict_spread"), 3);
		assertThat(j.get("noisy").isArray()).isTrue();
		assertThat(j.has("scaling")).isFalse();
		assertThat(j.get("alloc_bytes_per_mb").isNumber()).isTrue();
		assertThat(j.get("verified").asBoolean()).isTrue();
		// UCX's row, measured in the same run: the bulk room, 1-page rooms, the many test and page size 1, each
		// against its own baseline; or why there is none.
		String ucxMissing = Ucx.unavailabilityReason();
		if (ucxMissing != null) {
			assertThat(j.get("ucx_missing").asText()).isEqualTo(ucxMissing);
			return;
		}
		assertThat(j.get("ucx")).hasSize(1);
		JsonNode ucx = j.get("ucx").get(0);
		assertThat(ucx.get("tls").asText()).isEqualTo("posix,cma,self");
		assertThat(ucx.get("transport").asText()).startsWith("UCX (UCX_TLS=posix,cma,self): one-sided reads");
		assertThat(ucx.get("bulk").get("gbps").asDouble()).isPositive();
		assertThat(ucx.get("bulk").get("baseline_gbps").asDouble()).isPositive();
		assertThat(ucx.get("small").get("p50_us").asDouble()).isPositive();
		assertThat(ucx.has("small_8")).isFalse();
		assertThat(ucx.get("many").get("failures").asInt()).isZero();
		assertThat(ucx.get("many").get("ratio_to_bulk").asDouble()).isPositive();
		assertThat(ucx.get("tiny_pages").get("failures").asInt()).isZero();
		assertThat(ucx.get("tiny_pages").get("tp2").get("gbps").asDouble()).isPositive();
		assertThat(ucx.has("same_host")).isFalse();
	}

	private static void assertSpread(JsonNode spread, int rounds) {
		assertThat(spread.get("rounds").asInt()).as(spread.toString()).isEqualTo(rounds);
		assertThat(spread.get("ratio_min").asDouble()).as(spread.toString()).isPositive()
				.isLessThanOrEqualTo(spread.get("ratio_median").asDouble());
		assertThat(spread.get("ratio_max").asDouble()).as(spread.toString())
				.isGreaterThanOrEqualTo(spread.get("ratio_median").asDouble());
		assertThat(spread.get("baseline_spread").asDouble()).as(spread.toString()).isNotNegative();
		assertThat(spread.get("noisy").isBoolean()).as(spread.toString()).isTrue();
	}

	@Test
	void ucxRowsPrintTheirTransportsAndDataPathBesideTheirBaselines() throws Exception {
		String ucxMissing = Ucx.unavailabilityReason();
		Assumptions.assumeTrue(ucxMissing == null, () -> "UCX rows skipped: " + ucxMissing);
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--transport", "ucx", "--ucx-tls", "posix,cma,self", "--ucx-tls", "tcp",
				"--bulk-only", "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--bulk-mib", "2", "--rounds",
				"1", "--bulk-warmup", "1");
		assertThat(status).as(err.toString()).isZero();
		assertThat(out.toString())
				.containsPattern("(?m)^  UCX_TLS=posix,cma,self: UCX \\(UCX_TLS=posix,cma,self\\): one-sided reads.*"
						+ "\\R  bulk 2.0 MiB 1<->1 x2 +\\d+\\.\\d\\d GB/s +\\d+\\.\\d\\d GB/s ")
				.containsPattern("(?m)^  UCX_TLS=tcp: UCX \\(UCX_TLS=tcp\\): active messages.*\\R  bulk 2.0 MiB ")
				.contains("OK, every byte matched");
		assertThat(out.toString().lines().filter(l -> l.startsWith("  bulk "))).as("no TCP row").hasSize(2);

		StringWriter refusal = new StringWriter();
		cl.setErr(new PrintWriter(refusal, true));
		assertThat(cl.execute("bench", "--transport", "shm")).isEqualTo(2);
		assertThat(refusal.toString()).contains("--transport : shm (expected: tcp, ucx or tcp,ucx; shared memory has "
				+ "the same host row)");
	}

	@Test
	void bulkOnlyMeasuresTheBulkRoomOverTheStripesAsked() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--json", "--transport", "tcp", "--bulk-only", "--stripes", "3", "--layers", "2", "--kv-heads", "2",
				"--head-dim", "64", "--bulk-mib", "2", "--rounds", "1", "--bulk-warmup", "1");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		assertThat(j.get("bulk").get("stripes").asInt()).isEqualTo(3);
		assertThat(j.get("bulk").get("gbps").asDouble()).isPositive();
		assertThat(j.has("small")).isFalse();
		assertThat(j.has("many")).isFalse();
		assertThat(j.get("verified").asBoolean()).isTrue();

		StringWriter refusal = new StringWriter();
		cl.setErr(new PrintWriter(refusal, true));
		assertThat(cl.execute("bench", "--stripes", "0")).isEqualTo(2);
		assertThat(refusal.toString()).contains("--stripes : 0 (expected: 1..8)");
	}

	@Test
	void ioUringRunsTheBulkRoomWhereTheKernelAllowsItAndSaysWhichModeRan() throws Exception {
		LoopResources probe = LoopResources.create("io-probe", 1, IoMode.IO_URING, false);
		IoMode here = probe.ioMode();
		probe.dispose();
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--json", "--transport", "tcp", "--bulk-only", "--io", "io_uring", "--layers", "2", "--kv-heads",
				"2", "--head-dim", "64", "--bulk-mib", "2", "--rounds", "1", "--bulk-warmup", "1");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		// Where io_uring is unavailable the bench falls back (the reason logged) and says what ran.
		assertThat(j.get("io").asText()).isEqualTo(here.label());
		// What shapes every loopback figure is named beside them: the kernel's congestion control, as it says.
		assertThat(j.get("tcp_congestion_control").asText()).isEqualTo(TcpBaseline.congestionControl())
				.isNotBlank();
		assertThat(j.get("bulk").get("gbps").asDouble()).isPositive();
		assertThat(j.get("verified").asBoolean()).isTrue();

		StringWriter refusal = new StringWriter();
		cl.setErr(new PrintWriter(refusal, true));
		assertThat(cl.execute("bench", "--io", "uring")).isEqualTo(2);
		assertThat(refusal.toString()).contains("--io : uring (expected: epoll, io_uring or nio)");
	}

	@Test
	void ioCompareMovesEveryTestOverEpollAndIoUringInOneRun() throws Exception {
		LoopResources probe = LoopResources.create("io-probe", 1, IoMode.IO_URING, false);
		IoMode here = probe.ioMode();
		probe.dispose();
		Assumptions.assumeTrue(here == IoMode.IO_URING, "io_uring unavailable here");
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--json", "--io-compare", "--layers", "2", "--kv-heads", "2", "--head-dim",
				"64", "--bulk-mib", "2", "--rounds", "2", "--bulk-warmup", "1", "--many-rooms", "20", "--many-warmup",
				"0", "--tiny-rooms", "2", "--tiny-tokens", "64", "--tiny-rounds", "2", "--tiny-warmup", "1",
				"--small-iterations", "5", "--small-warmup", "0");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString()).get("io_compare");
		assertThat(j.get("epoll_gbps").asDouble()).isPositive();
		assertThat(j.get("io_uring_gbps").asDouble()).isPositive();
		assertThat(j.get("ratio").asDouble()).isPositive();
		assertThat(j.get("rounds").asInt()).isEqualTo(2);
		assertThat(j.get("failures").asInt()).isZero();
		JsonNode small = j.get("small");
		for (String mode : new String[] { "epoll", "io_uring" }) {
			assertThat(small.get(mode + "_p50_us").asDouble()).as("small " + mode).isPositive();
			assertThat(small.get(mode + "_ratio_to_baseline").asDouble()).as("small " + mode).isPositive();
			assertThat(small.get(mode).get("pages").asInt()).isEqualTo(1);
		}
		assertThat(small.get("p50_ratio").asDouble()).isPositive();
		for (String test : new String[] { "many", "tiny_pages" }) {
			JsonNode t = j.get(test);
			for (String mode : new String[] { "epoll", "io_uring" }) {
				assertThat(t.get(mode + "_gbps").asDouble()).as(test + " " + mode).isPositive();
				assertThat(t.get(mode + "_ratio_to_baseline").asDouble()).as(test + " " + mode).isPositive();
			}
			assertThat(t.get("ratio").asDouble()).as(test).isPositive();
			assertThat(t.get("baseline_ratio").asDouble()).as(test).isPositive();
			assertThat(t.get("failures").asInt()).as(test).isZero();
		}
		assertThat(j.get("many").get("io_uring").get("rooms").asInt()).isEqualTo(20);
		assertThat(j.get("tiny_pages").get("io_uring").get("tp2").get("rooms").asInt()).isEqualTo(2);
	}

	@Test
	void manyOnlyMeasuresTheConcurrentRoomsAndTheCoresTheyKeptBusy() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--json", "--transport", "tcp", "--many-only", "--layers", "2", "--kv-heads", "2", "--head-dim",
				"64", "--many-rooms", "30", "--many-warmup", "0", "--rounds", "3");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		JsonNode many = j.get("many");
		assertThat(many.get("rooms").asInt()).isEqualTo(30);
		assertThat(many.get("batches").asInt()).isEqualTo(3);
		assertThat(many.get("warmup_batches").asInt()).isEqualTo(2);
		assertThat(many.get("failures").asInt()).isZero();
		assertThat(many.get("gbps").asDouble()).isPositive();
		assertThat(many.get("cpu_cores").asDouble()).isPositive();
		// The frame pump moves the same frames (every byte of its first run checked, else "verified" is false): at
		// least one per room, rank and layer buffer (2 layers, K and V), at most one per page of each.
		assertThat(many.get("baseline_gbps").asDouble()).isPositive();
		assertThat(many.get("ratio").asDouble()).isPositive();
		assertThat(many.get("frames").asInt()).isBetween(30 * 2 * 4, 30 * 2 * 4 * 4);
		assertThat(j.has("bulk")).isFalse();
		assertThat(j.has("same_host")).isFalse();
		assertThat(j.get("verified").asBoolean()).isTrue();

		StringWriter table = new StringWriter();
		cl.setOut(new PrintWriter(table, true));
		assertThat(cl.execute("bench", "--transport", "tcp", "--many-only", "--layers", "2", "--kv-heads", "2",
				"--head-dim", "64", "--many-rooms", "10", "--many-warmup", "0", "--rounds", "1")).isZero();
		assertThat(table.toString()).contains("many 10 rooms 2<->2").contains("cores busy").contains("frame pump")
				.contains("OK, every byte matched").doesNotContain("bulk");

		StringWriter refusal = new StringWriter();
		cl.setErr(new PrintWriter(refusal, true));
		assertThat(cl.execute("bench", "--many-only", "--bulk-only")).isEqualTo(2);
		assertThat(refusal.toString()).contains("--bulk-only and --many-only exclude each other");
		assertThat(cl.execute("bench", "--many-warmup", "-1")).isEqualTo(2);
		assertThat(refusal.toString()).contains("--many-warmup : -1 (expected: >= 0)");
		assertThat(cl.execute("bench", "--small-warmup", "-1")).isEqualTo(2);
		assertThat(refusal.toString()).contains("--small-warmup : -1 (expected: >= 0)");
	}

	@Test
	void tracingComparisonReportsBothSidesAndExportsTwoSpansPerTracedRoom() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--tracing", "--json", "--layers", "2", "--kv-heads", "2", "--head-dim",
				"64", "--tracing-rooms", "20", "--rounds", "1");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		assertThat(j.get("rooms_per_round").asInt()).isEqualTo(20);
		assertThat(j.get("off_rooms_per_second").asLong()).isPositive();
		assertThat(j.get("on_rooms_per_second").asLong()).isPositive();
		assertThat(j.get("off_bytes_per_room").asLong()).isPositive();
		assertThat(j.get("on_bytes_per_room").asLong()).isPositive();
		// A decode and a prefill span per traced room: the warm-up round and the timed one.
		assertThat(j.get("spans_exported").asLong()).isEqualTo(2 * 2 * 20);
		assertThat(j.get("failures").asInt()).isZero();
	}

	@Test
	void optimisticComparisonTimesBothWaysAndVerifiesEveryRoom() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--optimistic", "--json", "--layers", "2", "--kv-heads", "2", "--head-dim",
				"64", "--rounds", "2");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		assertThat(j.get("rounds").asInt()).isEqualTo(2);
		assertThat(j.get("late_ms").asLong()).isEqualTo(50);
		// Each way waits at least for decode's late request; waiting also computes after it.
		assertThat(j.get("optimistic_p50_ms").asDouble()).isGreaterThanOrEqualTo(50);
		assertThat(j.get("waiting_p50_ms").asDouble()).isGreaterThanOrEqualTo(100);
		assertThat(j.get("failures").asInt()).isZero();
	}

	@Test
	void smallUnderBulkTimesOneRoomsAloneAndBehindALargeRoom() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--small-under-bulk", "--json", "--layers", "2", "--kv-heads", "2",
				"--head-dim", "64", "--bulk-mib", "64", "--rounds", "1");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		assertThat(j.get("alone_p50_us").asDouble()).isPositive();
		assertThat(j.get("bulk_bytes").asLong()).isEqualTo(64L << 20);
		assertThat(j.get("failures").asInt()).isZero();
		// Small rooms under the large one take turns as NORMAL and HIGH: both counts are reported, one apart at most.
		assertThat(j.get("under_bulk_high_rooms").asInt() - j.get("under_bulk_rooms").asInt()).isBetween(-1, 1);
		assertThat(j.has("under_bulk_high_p50_us")).isTrue();
		assertThat(j.has("high_ratio")).isTrue();
	}
}
