package io.kvferry.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs the demo in-process, over real loopback sockets, with a tiny model shape. */
@Timeout(60)
class DemoCommandTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final String[] TINY = { "--layers", "4", "--kv-heads", "4", "--head-dim", "16", "--page-size", "4",
			"--min-tokens", "4", "--max-tokens", "96", "--requests", "6", "--concurrency", "3" };

	private final StringWriter out = new StringWriter();
	private final StringWriter err = new StringWriter();

	private int demo(String... extra) {
		List<String> args = new ArrayList<>(List.of("demo"));
		args.addAll(List.of(TINY));
		args.addAll(List.of(extra));
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		return cl.execute(args.toArray(String[]::new));
	}

	@Test
	void jsonModePrintsOneObjectWithEveryFigureAndVerifiedTrue() throws Exception {
		int status = demo("--json");
		assertThat(status).as(err.toString()).isZero();
		String stdout = out.toString().trim();
		assertThat(stdout.lines()).hasSize(1);
		JsonNode j = JSON.readTree(stdout);
		assertThat(j.get("requests").asInt()).isEqualTo(6);
		assertThat(j.get("completed").asInt()).isEqualTo(6);
		assertThat(j.get("failures").asInt()).isZero();
		assertThat(j.get("verified").asBoolean()).isTrue();
		// 6 requests whose pages hold 4 tokens x 4 heads x 16 bf16 = 512 B per layer buffer, 8 buffers.
		assertThat(j.get("bytes").asLong()).isEqualTo(j.get("pages").asLong() * 512 * 8).isPositive();
		for (String field : new String[] { "gbps", "p50_ms", "p99_ms", "max_ms", "seconds" }) {
			assertThat(j.get(field)).as(field).isNotNull();
			assertThat(j.get(field).isNumber()).as(field).isTrue();
		}
		assertThat(j.get("p99_ms").asDouble()).isGreaterThanOrEqualTo(j.get("p50_ms").asDouble());
		assertThat(j.get("failure_reasons")).isEmpty();
		assertThat(j.get("transport").asText()).as("the default data path on one host")
				.isEqualTo("shared memory (same host)");
	}

	@Test
	void transportTcpKeepsEveryByteOnTcpAndSaysSo() throws Exception {
		int status = demo("--json", "--transport", "tcp");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = JSON.readTree(out.toString());
		assertThat(j.get("verified").asBoolean()).isTrue();
		assertThat(j.get("transport").asText()).isEqualTo("TCP");
	}

	@Test
	void anUnknownTransportIsABadUsage() {
		assertThat(demo("--transport", "rdma")).isEqualTo(2);
		assertThat(err.toString()).contains("--transport : rdma (expected: shm, tcp or ucx)");
	}

	@ParameterizedTest
	@ValueSource(strings = { "--prefill-tp 2 --decode-tp 1", "--prefill-tp 1 --decode-tp 2",
			"--prefill-pp 2 --decode-pp 1", "--prefill-dp 2", "--mla --prefill-tp 2 --decode-tp 1",
			"--prefill-cp 2 --all-cp-ranks --prefill-tp 2 --decode-tp 1", "--prefill-cp 2 --decode-prefix 0.5",
			"--mamba-state --prefill-tp 1 --decode-tp 2 --decode-prefix 1",
			"--prefill-kv-layout NHD --decode-kv-layout HND --transport tcp",
			"--prefill-kv-layout HND --decode-kv-layout NHD --prefill-tp 2 --decode-tp 1",
			"--prefill-kv-layout HND --decode-kv-layout HND --prefill-tp 1 --decode-tp 2" })
	void everyLayoutVerifiesEveryByte(String layout) throws Exception {
		int status = demo((layout + " --json").split(" "));
		assertThat(status).as(err.toString()).isZero();
		assertThat(JSON.readTree(out.toString()).get("verified").asBoolean()).isTrue();
	}

	@Test
	void tableModePrintsTheSummaryOnStdoutAndTheHeaderOnStderr() {
		int status = demo();
		assertThat(status).as(err.toString()).isZero();
		assertThat(out.toString()).contains("requests", "6 of 6 verified", "pages", "bytes", "throughput",
				"latency p50", "latency p99", "latency max", "failures", "OK: every byte matched");
		assertThat(err.toString()).contains("kvferry demo: 6 requests")
				.contains("prefill TP1 PP1 DP1 -> decode TP1 PP1")
				.contains("6/6 rooms");
	}
}
