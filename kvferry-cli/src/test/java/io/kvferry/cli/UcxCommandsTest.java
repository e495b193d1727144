package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.test.Child;
import io.kvferry.transport.ucx.Ucx;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code --transport ucx} on demo, prefill and decode: every byte moved through UCX and checked on decode, the UCX
 * transports in use printed, and a clear refusal where UCX cannot be loaded. The tests that move bytes need the
 * system's UCX (Debian: libucx0) and say so where it is missing; the refusal runs everywhere.
 */
@Timeout(120)
class UcxCommandsTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START = Duration.ofSeconds(60);
	private static final String[] TINY = { "--layers", "4", "--kv-heads", "4", "--head-dim", "16", "--page-size", "4",
			"--min-tokens", "4", "--max-tokens", "96", "--requests", "6", "--concurrency", "3" };
	private static final String[] SHAPE = { "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--page-size",
			"16" };

	private final StringWriter out = new StringWriter();
	private final StringWriter err = new StringWriter();

	private static void assumeUcx() {
		String problem = Ucx.unavailabilityReason();
		Assumptions.assumeTrue(problem == null, () -> "UCX tests skipped: " + problem);
	}

	private int demo(String... extra) {
		List<String> args = new ArrayList<>(List.of("demo"));
		args.addAll(List.of(TINY));
		args.addAll(List.of(extra));
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(out, true));
		cl.setErr(new PrintWriter(err, true));
		return cl.execute(args.toArray(String[]::new));
	}

	private static String[] shaped(String... parts) {
		List<String> all = new ArrayList<>(List.of(parts));
		all.addAll(List.of(SHAPE));
		return all.toArray(String[]::new);
	}

	@Test
	void demoOverUcxSharedMemoryReadsEveryByteOneSidedAndSaysSo() throws Exception {
		assumeUcx();
		int status = demo("--json", "--transport", "ucx");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = JSON.readTree(out.toString());
		assertThat(j.get("verified").asBoolean()).isTrue();
		assertThat(j.get("completed").asInt()).isEqualTo(6);
		// The demo's ranks share a host: shared memory, where UCX reads natively, is its default.
		assertThat(j.get("transport").asText()).startsWith("UCX (UCX_TLS=posix,cma,self): one-sided reads, ")
				.doesNotContain("active messages");

		// Without --json the UCX transports in use are printed as the demo starts.
		out.getBuffer().setLength(0);
		assertThat(demo("--transport", "ucx")).as(err.toString()).isZero();
		assertThat(err.toString()).contains("  transport UCX, UCX_TLS=posix,cma,self: decode reads one-sided");
		assertThat(out.toString()).contains("UCX (UCX_TLS=posix,cma,self): one-sided reads", "OK: every byte matched");
	}

	@Test
	void demoOverUcxTcpMovesEveryByteInActiveMessagesAndSaysSo() throws Exception {
		assumeUcx();
		int status = demo("--json", "--transport", "ucx", "--ucx-tls", "tcp");
		assertThat(status).as(err.toString()).isZero();
		JsonNode j = JSON.readTree(out.toString());
		assertThat(j.get("verified").asBoolean()).isTrue();
		// UCX only emulates RMA over TCP: the bytes travel in active messages instead.
		assertThat(j.get("transport").asText()).startsWith("UCX (UCX_TLS=tcp): active messages, ")
				.doesNotContain("one-sided");
	}

	@Test
	void ucxTlsWithoutTransportUcxIsABadUsage() {
		assertThat(demo("--transport", "tcp", "--ucx-tls", "tcp")).isEqualTo(2);
		assertThat(err.toString()).contains("--ucx-tls needs --transport ucx");
	}

	@Test
	void prefillAndDecodeProcessesMoveEveryByteOverUcx() throws Exception {
		assumeUcx();
		try (Child bootstrap = CliChild.start("bootstrap", "bootstrap", "--host", "127.0.0.1", "--port", "0")) {
			String address = bootstrap.awaitLine("kvferry bootstrap: listening on (\\S+)", START).group(1);
			try (Child prefill = CliChild.start("prefill", shaped("prefill", "--bootstrap", address, "--host",
					"127.0.0.1", "--prefill-tp", "2", "--transport", "ucx", "--ucx-tls", "tcp"))) {
				prefill.awaitLine("kvferry prefill: ready, 2 ranks", START);
				try (Child decode = CliChild.start("decode", shaped("decode", "--bootstrap", address, "--requests",
						"8", "--concurrency", "3", "--min-tokens", "16", "--max-tokens", "512", "--json",
						"--transport", "ucx", "--ucx-tls", "tcp"))) {
					int status = decode.awaitExit(START);
					assertThat(status).as(decode.output() + prefill.output()).isZero();
					JsonNode j = JSON.readTree(decode.stdout());
					assertThat(j.get("verified").asBoolean()).isTrue();
					assertThat(j.get("completed").asInt()).isEqualTo(8);
					assertThat(j.get("failures").asInt()).isZero();
					assertThat(j.get("transport").asText()).startsWith("UCX (UCX_TLS=tcp): active messages, ");
				}
				assertThat(prefill.stdout()).contains("transport UCX, UCX_TLS=tcp");
			}
		}
	}

	@Test
	void whereUcxCannotBeLoadedTheCommandCouldNotRunAndNamesTheLibrary(@TempDir Path dir) throws Exception {
		// A library of UCX's name that the dynamic loader finds before the system's and cannot load: what a machine
		// without UCX (or with a broken one) shows JUCX.
		Files.createFile(dir.resolve("libucp.so.0"));
		List<String> wrapper = List.of("env", "LD_LIBRARY_PATH=" + dir);
		for (String command : new String[] { "demo", "bench" }) {
			String[] args = command.equals("bench") ? new String[] { command, "--transport", "ucx", "--bulk-mib", "2" }
					: new String[] { command, "--transport", "ucx" };
			try (Child child = CliChild.start(command, wrapper, Set.of(), args)) {
				assertThat(child.awaitExit(START)).as(child.output()).isEqualTo(KVFerryCli.EXIT_ERROR);
				assertThat(child.stderr()).contains("kvferry " + command + ": --transport ucx: UCX is not installed "
						+ "here: libucp.so.0 cannot be loaded (file too short); JUCX needs the system's UCX 1.13 or "
						+ "newer: apt-get install libucx0 on Debian and Ubuntu; or run with --transport tcp");
			}
		}
	}
}
