package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** Runs the layer-wise bench and the demo's layer-wise mode in-process, over real loopback sockets, on a tiny shape. */
@Timeout(120)
class LayerwiseBenchTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final String[] TINY = { "--layers", "4", "--kv-heads", "4", "--head-dim", "16", "--page-size", "4" };

	private final StringWriter out = new StringWriter();
	private final StringWriter err = new StringWriter();

	private int run(String... args) {
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		String[] all = new String[args.length + TINY.length];
		System.arraycopy(args, 0, all, 0, args.length);
		System.arraycopy(TINY, 0, all, args.length, TINY.length);
		return cl.execute(all);
	}

	@Test
	void benchMeasuresBothWaysAndVerifiesEveryRoom() throws Exception {
		int status = run("bench-layerwise", "--tokens", "64", "--rounds", "1", "--rooms", "1", "--layer-compute", "1ms",
				"--json");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = JSON.readTree(out.toString().trim());
		assertThat(j.get("failures").asInt()).isZero();
		// 16 pages of 4 tokens x 4 heads x 16 bf16 = 512 B per layer buffer, 8 buffers.
		assertThat(j.get("bytes_per_room").asLong()).isEqualTo(16L * 512 * 8);
		for (String side : new String[] { "whole_chunk", "layer_wise" }) {
			assertThat(j.get(side).get("tail_p50_ms").asDouble()).as(side).isPositive();
			assertThat(j.get(side).get("gbps_no_compute_p50").asDouble()).as(side).isPositive();
		}
	}

	@Test
	void demoLayerwiseShowsTheTailsSideBySide() {
		int status = run("demo", "--layerwise", "--layer-compute", "1ms");
		assertThat(status).as(err.toString()).isZero();
		assertThat(out.toString()).contains("whole-chunk").contains("layer-wise").contains("every byte matched");
	}
}
