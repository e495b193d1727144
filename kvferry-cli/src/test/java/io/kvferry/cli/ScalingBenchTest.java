package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * {@code bench --scaling} in-process with a toy model: every sweep's rows are there, every room verified, and each
 * ranks row is the median of its batches, beside its frame pump; the smallest rooms one at a time are held against a
 * ping-pong. Checks what it reports, not how fast anything is.
 */
@Timeout(180)
class ScalingBenchTest {

	@Test
	void everySweepReportsItsRowsAndTheRanksRowsAreMediansOfTheirBatches() throws Exception {
		StringWriter out = new StringWriter();
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute("bench", "--json", "--transport", "tcp", "--scaling", "--layers", "2", "--kv-heads", "2", "--head-dim", "64",
				"--bulk-mib", "2", "--rounds", "1", "--bulk-warmup", "1", "--small-iterations", "3", "--small-warmup",
				"0", "--same-host-warmup", "0", "--many-rooms", "20", "--many-warmup", "0", "--tiny-rooms", "2",
				"--tiny-tokens", "64", "--tiny-rounds", "1", "--tiny-warmup", "1");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = new ObjectMapper().readTree(out.toString());
		assertThat(j.get("verified").asBoolean()).isTrue();
		List<String> rows = new ArrayList<>();
		for (JsonNode row : j.get("scaling")) {
			String dimension = row.get("dimension").asText();
			rows.add(dimension + " " + row.get("value").asLong());
			assertThat(row.get("rooms").asInt()).as(rows.get(rows.size() - 1)).isPositive();
			assertThat(row.get("gbps").asDouble()).as(rows.get(rows.size() - 1)).isPositive();
			assertThat(row.get("p99_us").asLong()).isGreaterThanOrEqualTo(row.get("p50_us").asLong());
			if (dimension.equals("ranks")) {
				assertThat(row.path("batches").asInt()).as("batches of %s", rows.get(rows.size() - 1)).isEqualTo(5);
				assertThat(row.get("gbps").asDouble()).isBetween(row.get("gbps_min").asDouble(),
						row.get("gbps_max").asDouble());
				// The frame pump over as many connections took its turns and moved the same bytes.
				assertThat(row.get("pump_gbps").asDouble()).isPositive();
				assertThat(row.get("ratio_to_pump").asDouble()).isPositive();
			}
			else {
				assertThat(row.has("batches")).as("a single batch: %s", rows.get(rows.size() - 1)).isFalse();
			}
		}
		JsonNode smallest = j.get("scaling").get(5);
		assertThat(smallest.get("value").asLong()).isEqualTo(65536);
		assertThat(smallest.get("pingpong_rounds").asInt()).isEqualTo(5);
		assertThat(smallest.get("pingpong_cpu_us").asLong()).isPositive();
		assertThat(smallest.get("pingpong_p50_us").asLong()).isPositive();
		assertThat(smallest.get("rounds_cpu_us_per_room").asLong()).isPositive();
		assertThat(smallest.get("cpu_ratio_to_pingpong").asDouble()).isPositive();
		// The event loops' ping-pong with a verdict, a room's three trips, in turn with the rooms.
		assertThat(smallest.get("loop_verdict_cpu_us").asLong()).isPositive();
		assertThat(smallest.get("loop_verdict_p50_us").asLong()).isPositive();
		assertThat(smallest.get("cpu_ratio_to_loop_verdict").asDouble()).isPositive();
		assertThat(smallest.get("loop_verdict_loops_cpu_us").asLong()).isPositive()
				.isLessThanOrEqualTo(smallest.get("loop_verdict_cpu_us").asLong() + 1);
		// Untimed rounds until the JIT compiler was quiet, at most 25; what it still ran in the timed ones beside.
		assertThat(smallest.get("warmup_rounds").asInt()).isBetween(1, 25);
		assertThat(smallest.get("rounds_jit_us_per_room").asLong()).isNotNegative()
				.isLessThan(smallest.get("rounds_cpu_us_per_room").asLong());
		// Both transports' loops and the threads the rooms start on ran some of it, together no more than all of it.
		long transport = smallest.get("rounds_transport_cpu_us_per_room").asLong();
		long engine = smallest.get("rounds_engine_cpu_us_per_room").asLong();
		assertThat(transport).isPositive();
		assertThat(engine).isPositive();
		assertThat(transport + engine).isLessThanOrEqualTo(smallest.get("rounds_cpu_us_per_room").asLong() + 1);
		assertThat(rows).containsExactly("rooms 1", "rooms 10", "rooms 100", "rooms 1000", "rooms 10000",
				"room_bytes 65536", "room_bytes 1048576", "room_bytes 16777216", "room_bytes 268435456", "ranks 1",
				"ranks 2", "ranks 4");
	}
}
