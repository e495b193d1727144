package io.kvferry.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import io.kvferry.HostPort;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;

class KVFerryCliTest {

	private final StringWriter out = new StringWriter();
	private final StringWriter err = new StringWriter();

	private CommandLine cli() {
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		return cl;
	}

	@SuppressWarnings("unchecked")
	private <T> T parse(String... args) {
		CommandLine cl = cli();
		CommandLine.ParseResult result = cl.parseArgs(args);
		return (T) result.subcommand().commandSpec().userObject();
	}

	@Test
	void demoDefaultsAreALlama3_8bBatchOnOneToOneRanks() {
		DemoCommand demo = parse("demo");
		assertThat(demo.workload.requests).isEqualTo(64);
		assertThat(demo.workload.concurrency).isEqualTo(4);
		assertThat(demo.workload.maxTokens).isGreaterThanOrEqualTo(10_000);
		assertThat(demo.model.shape(cli())).isEqualTo(io.kvferry.harness.ModelShape.llama3_8b());
		assertThat(demo.prefill.tp).isEqualTo(1);
		assertThat(demo.prefill.pp).isEqualTo(1);
		assertThat(demo.prefill.dp).isEqualTo(1);
		assertThat(demo.decode.tp).isEqualTo(1);
		assertThat(demo.decode.pp).isEqualTo(1);
		assertThat(demo.json).isFalse();
		assertThat(demo.timeouts.heartbeatInterval).isEqualTo(Duration.ofSeconds(5));
	}

	@Test
	void demoReadsEveryDocumentedOption() {
		DemoCommand demo = parse("demo", "--requests", "10", "--concurrency", "3", "--prefill-tp", "4", "--decode-tp",
				"2", "--prefill-pp", "2", "--decode-pp", "2", "--prefill-dp", "2", "--mla", "--layers", "8",
				"--kv-heads", "4", "--head-dim", "64", "--page-size", "32", "--json", "--seed", "7",
				"--min-tokens", "100", "--max-tokens", "1000", "--chunk-tokens", "512", "--pool-mib", "64");
		assertThat(demo.workload.requests).isEqualTo(10);
		assertThat(demo.workload.concurrency).isEqualTo(3);
		assertThat(demo.prefill.tp).isEqualTo(4);
		assertThat(demo.decode.tp).isEqualTo(2);
		assertThat(demo.prefill.pp).isEqualTo(2);
		assertThat(demo.decode.pp).isEqualTo(2);
		assertThat(demo.prefill.dp).isEqualTo(2);
		assertThat(demo.model.mla).isTrue();
		assertThat(demo.model.shape(cli())).isEqualTo(
				new io.kvferry.harness.ModelShape(8, 4, 64, 2, 32, true, 0, ModelOptions.AUX_ITEM_LEN, 0));
		assertThat(demo.json).isTrue();
		assertThat(demo.workload.seed).isEqualTo(7);
		assertThat(demo.workload.minTokens).isEqualTo(100);
		assertThat(demo.workload.maxTokens).isEqualTo(1000);
		assertThat(demo.workload.chunks(1025)).isEqualTo(3);
		assertThat(demo.workload.poolMib).isEqualTo(64);
	}

	@Test
	void mlaWithoutHeadDimUsesTheLatentWidth() {
		DemoCommand demo = parse("demo", "--mla");
		assertThat(demo.model.shape(cli()).headDim()).isEqualTo(576);
	}

	@Test
	void decodeReadsBootstrapAndDurations() {
		DecodeCommand decode = parse("decode", "--bootstrap", "10.0.0.5:8998", "--requests", "5", "--json",
				"--heartbeat-interval", "500ms", "--bootstrap-timeout", "1s", "--waiting-timeout", "5m",
				"--transfer-timeout", "1m30s", "--decode-tp", "2", "--keep-going", "--warmup", "3");
		assertThat(decode.bootstrap).isEqualTo(new HostPort("10.0.0.5", 8998));
		assertThat(decode.workload.requests).isEqualTo(5);
		assertThat(decode.json).isTrue();
		assertThat(decode.keepGoing).isTrue();
		assertThat(decode.warmup).isEqualTo(3);
		assertThat(((DecodeCommand) parse("decode", "--bootstrap", "10.0.0.5:8998")).warmup).isZero();
		assertThat(decode.decode.tp).isEqualTo(2);
		assertThat(decode.timeouts.heartbeatInterval).isEqualTo(Duration.ofMillis(500));
		assertThat(decode.timeouts.bootstrapTimeout).isEqualTo(Duration.ofSeconds(1));
		assertThat(decode.timeouts.waitingTimeout).isEqualTo(Duration.ofMinutes(5));
		assertThat(decode.timeouts.transferTimeout).isEqualTo(Duration.ofSeconds(90));
	}

	@Test
	void prefillReadsLayoutHostsAndPool() {
		PrefillCommand prefill = parse("prefill", "--bootstrap", "[::1]:8998", "--host", "127.0.0.1",
				"--advertise-host", "10.1.2.3", "--prefill-tp", "2", "--prefill-pp", "2", "--prefill-dp", "2",
				"--pool-tokens", "4096", "--chunk-tokens", "1024", "--layers", "4");
		assertThat(prefill.bootstrap).isEqualTo(new HostPort("::1", 8998));
		assertThat(prefill.host).isEqualTo("127.0.0.1");
		assertThat(prefill.advertiseHosts).containsExactly("10.1.2.3");
		assertThat(((PrefillCommand) parse("prefill", "--bootstrap", "10.0.0.5:8998", "--advertise-host",
				"10.1.2.3,10.2.2.3")).advertiseHosts).as("one address per interface").containsExactly("10.1.2.3",
						"10.2.2.3");
		assertThat(prefill.prefill.ranks()).isEqualTo(8);
		assertThat(prefill.poolTokens).isEqualTo(4096);
		assertThat(prefill.chunkTokens).isEqualTo(1024);
	}

	@Test
	void bootstrapDefaultsToSglangsPortOnEveryInterface() {
		BootstrapCommand bootstrap = parse("bootstrap");
		assertThat(bootstrap.host).isEqualTo("0.0.0.0");
		assertThat(bootstrap.port).isEqualTo(8998);
		bootstrap = parse("bootstrap", "--host", "127.0.0.1", "--port", "0");
		assertThat(bootstrap.port).isZero();
	}

	@Test
	void benchReadsItsSizes() {
		BenchCommand bench = parse("bench", "--bulk-mib", "64", "--rounds", "5", "--small-iterations", "50",
				"--many-rooms", "100", "--json");
		assertThat(bench.bulkMib).isEqualTo(64);
		assertThat(bench.rounds).isEqualTo(5);
		assertThat(bench.smallIterations).isEqualTo(50);
		assertThat(bench.manyRooms).isEqualTo(100);
		assertThat(bench.json).isTrue();
		// The warm-ups before the small rows and the same host rounds: 5 s and 3 s unless told; page size 1 ten
		// batches, for the JIT to finish its data path first.
		assertThat(bench.smallWarmupSeconds).isEqualTo(5);
		assertThat(bench.sameHostWarmup).isEqualTo(Duration.ofSeconds(3));
		assertThat(bench.tiny.warmup).isEqualTo(10);
		bench = parse("bench", "--small-warmup", "0", "--same-host-warmup", "250ms");
		assertThat(bench.smallWarmupSeconds).isZero();
		assertThat(bench.sameHostWarmup).isEqualTo(Duration.ofMillis(250));
	}

	@Test
	void aBadDurationIsAUsageErrorNamingTheOption() {
		int status = cli().execute("decode", "--bootstrap", "127.0.0.1:1", "--waiting-timeout", "soon");
		assertThat(status).isEqualTo(2);
		assertThat(err.toString()).contains("--waiting-timeout").contains("duration : 'soon'")
				.contains("Try 'kvferry decode --help'");
		assertThat(out.toString()).isEmpty();
	}

	@Test
	void decodeWithoutBootstrapIsAUsageError() {
		int status = cli().execute("decode");
		assertThat(status).isEqualTo(2);
		assertThat(err.toString()).contains("--bootstrap");
	}

	@Test
	void anUnknownOptionIsAUsageErrorWithASuggestion() {
		int status = cli().execute("demo", "--request", "3");
		assertThat(status).isEqualTo(2);
		assertThat(err.toString()).contains("Unknown option").contains("'--request'").contains("--requests");
	}

	@Test
	void invalidValuesAreRejectedBeforeAnythingStarts() {
		assertThat(cli().execute("demo", "--requests", "0")).isEqualTo(2);
		assertThat(err.toString()).contains("--requests : 0 (expected: >= 1)");
		assertThat(cli().execute("demo", "--layers", "30", "--prefill-pp", "4")).isEqualTo(2);
		assertThat(err.toString()).contains("--prefill-pp : 4 (expected: a divisor of --layers 30)");
		assertThat(cli().execute("demo", "--decode-pp", "2")).isEqualTo(2);
		assertThat(err.toString()).contains("--prefill-tp 1 --prefill-pp 1 with --decode-tp 1 --decode-pp 2 cannot work "
				+ "together: decode pp_size=2 does not fit prefill pp_size=1");
		// A TP pair that does not divide, named before any process or socket starts.
		assertThat(cli().execute("demo", "--kv-heads", "6", "--prefill-tp", "3", "--decode-tp", "2")).isEqualTo(2);
		assertThat(err.toString()).contains("--prefill-tp 3 --prefill-pp 1 with --decode-tp 2 --decode-pp 1 cannot "
				+ "work together: prefill attn_tp_size=3 and decode attn_tp_size=2 do not divide each other");
		assertThat(cli().execute("demo", "--prefill-tp", "3", "--decode-tp", "2", "--requests", "2")).isEqualTo(2);
		assertThat(err.toString()).contains("--prefill-tp : 3 (expected: a divisor or a multiple of --kv-heads 8, "
				+ "so that every rank holds whole KV heads)");
		assertThat(cli().execute("prefill", "--bootstrap", "127.0.0.1:1", "--advertise-host", "10.0.0.1,10.0.0.1"))
				.isEqualTo(2);
		assertThat(err.toString()).contains("--advertise-host : 10.0.0.1,10.0.0.1 (expected: 1..8 distinct addresses");
		assertThat(cli().execute("demo", "--min-tokens", "500", "--max-tokens", "100")).isEqualTo(2);
		assertThat(err.toString()).contains("--max-tokens : 100 (expected: >= --min-tokens 500)");
		assertThat(cli().execute("demo", "--heartbeat-interval", "0")).isEqualTo(2);
		assertThat(err.toString()).contains("--heartbeat-interval");
		assertThat(cli().execute("decode", "--bootstrap", "10.0.0.5:8998", "--warmup", "-1")).isEqualTo(2);
		assertThat(err.toString()).contains("--warmup : -1 (expected: >= 0)");
		assertThat(out.toString()).isEmpty();
	}

	@Test
	void aBatchLargerThanDirectMemoryIsRefusedWithAdvice() {
		int status = cli().execute("demo", "--max-tokens", "10000000", "--pool-mib", "100000000");
		assertThat(status).isEqualTo(2);
		assertThat(err.toString()).contains("KV pools : ").contains("MaxDirectMemorySize");
	}

	@Test
	void withoutACommandItPrintsUsageAndFails() {
		assertThat(cli().execute()).isEqualTo(2);
		assertThat(err.toString()).contains("Usage: kvferry").contains("demo").contains("bootstrap")
				.contains("prefill").contains("decode").contains("bench");
	}

	@Test
	void verboseLogsAtInfo() {
		LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
		Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
		Logger kvferry = context.getLogger("io.kvferry");
		Level rootBefore = root.getLevel();
		Level kvferryBefore = kvferry.getLevel();
		try {
			root.setLevel(Level.WARN);
			parse("demo");
			assertThat(root.getLevel()).isEqualTo(Level.WARN);
			parse("demo", "--verbose");
			assertThat(root.getLevel()).isEqualTo(Level.INFO);
			assertThat(kvferry.getLevel()).isEqualTo(Level.INFO);
		}
		finally {
			root.setLevel(rootBefore);
			kvferry.setLevel(kvferryBefore);
		}
	}

	@Test
	void versionNamesKvferry() {
		assertThat(cli().execute("--version")).isZero();
		assertThat(out.toString()).startsWith("kvferry ");
	}

	@ParameterizedTest
	@ValueSource(strings = { "demo", "bootstrap", "prefill", "decode", "bench" })
	void everyCommandDocumentsEveryOption(String command) {
		assertThat(cli().execute(command, "--help")).isZero();
		String help = out.toString();
		CommandLine sub = cli().getSubcommands().get(command);
		List<CommandLine.Model.OptionSpec> options = sub.getCommandSpec().options();
		assertThat(options).isNotEmpty();
		for (CommandLine.Model.OptionSpec o : options) {
			assertThat(help).contains(o.longestName());
			assertThat(o.description()).as(o.longestName()).isNotEmpty();
		}
	}
}
