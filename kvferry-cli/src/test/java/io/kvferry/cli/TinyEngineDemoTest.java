package io.kvferry.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.cli.KVFerryCli;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code kvferry demo --engine tiny} in-process, over real loopback sockets. */
@Timeout(60)
class TinyEngineDemoTest {

	private final StringWriter out = new StringWriter();
	private final StringWriter err = new StringWriter();

	private int demo(String... extra) {
		List<String> args = new ArrayList<>(List.of("demo", "--engine"));
		args.addAll(List.of(extra));
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		return cl.execute(args.toArray(String[]::new));
	}

	@ParameterizedTest
	@ValueSource(strings = { "tiny", "tiny --prefill-tp 2 --decode-tp 1" })
	void printsEveryRequestsPromptAndTokensAndThatTheyMatchTheReference(String args) {
		int status = demo(args.split(" "));
		assertThat(status).as(err.toString()).isZero();
		assertThat(err.toString()).contains("kvferry demo --engine tiny: 3 layers, 8 query and 4 KV heads of 16 (fp32)");
		String stdout = out.toString();
		assertThat(stdout.lines().filter(l -> l.matches("room \\d+ {2}prompt {4}\\[.*\\] \\(\\d+ tokens\\)"))).hasSize(3);
		// The state stream is hot: a receiver whose prefill route was already known may be past Bootstrapping by the
		// time the engine subscribes, so the first states are optional; the order and the Success are not.
		assertThat(stdout.lines().filter(l -> l.matches(
				" +states {4}(BOOTSTRAPPING > )?(WAITING_FOR_INPUT > )?(TRANSFERRING > )?SUCCESS"))).hasSize(3);
		assertThat(stdout.lines().filter(l -> l.matches(" +tokens {4}\\[(\\d+, ){8}\\d+\\] .*8 decoded here\\)")))
				.hasSize(3);
		assertThat(stdout.lines().filter(l -> l.contains("reference") && l.contains(" match (max logit difference 0.0)")))
				.hasSize(3);
		assertThat(stdout).contains("OK: 3 of 3 requests decoded from transferred KV match the single-process "
				+ "reference (max logit difference 0.0)");
	}

	@Test
	void refusesAnUnknownEngine() {
		assertThat(demo("huge")).isEqualTo(2);
		assertThat(err.toString()).contains("--engine : huge (expected: tiny)");
	}

	@Test
	void refusesTpSizesTheModelsHeadsDoNotSplitOver() {
		assertThat(demo("tiny", "--decode-tp", "3")).isEqualTo(2);
		assertThat(err.toString()).contains("--decode-tp : 3 (expected: one of [1, 2, 4, 8] for 4 KV heads and 8 query "
				+ "heads)");
	}

	@Test
	void refusesOptionsOfByteCheckedRuns() {
		assertThat(demo("tiny", "--requests", "5")).isEqualTo(2);
		assertThat(err.toString()).contains("--requests : not used with --engine (expected: only --decode-tp, "
				+ "--engine, --prefill-tp, --verbose)");
	}
}
