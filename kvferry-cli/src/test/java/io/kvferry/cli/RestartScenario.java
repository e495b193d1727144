package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.test.Child;

/**
 * Roles stopped and started again while others keep running, as an operator or a script does: against a standing
 * bootstrap server and a long-running decode, short decode processes run one right after another (the first beside
 * the long-running one as it starts), and prefill processes are stopped (drained with SIGTERM, or killed) and started
 * again on a new port. Every room of every short
 * run must be verified; a restarted prefill must serve the long-running decode's rooms within two heartbeat intervals
 * of registering; the long-running decode fails only the rooms asked while no prefill was there, each with a reason
 * that says so. Public for the network namespace test, which runs the same scenario across hosts.
 */
public final class RestartScenario {

	/** How a prefill process is stopped before the next one starts. */
	public enum Stop {
		/** SIGTERM: it drains and exits 0. */
		DRAIN,
		/** SIGKILL, as a crash: its connections reset and the bootstrap server still names its old port. */
		KILL
	}

	/** Where the roles run: one host (loopback) or hosts of their own. */
	public interface Hosts {

		/** @return the address the role listens on (its {@code --host}) */
		String address(String role);

		/**
		 * Starts {@code kvferry args...} on the role's host.
		 *
		 * @param name the process's name in failure messages
		 */
		Child start(String role, String name, String... args) throws Exception;
	}

	public static final String BOOTSTRAP = "bootstrap";
	public static final String PREFILL = "prefill";
	public static final String DECODE = "decode";

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START = Duration.ofSeconds(60);
	private static final Duration RUN = Duration.ofSeconds(60);
	private static final Duration HEARTBEAT = Duration.ofSeconds(1);
	private static final String[] SHAPE = { "--layers", "8", "--kv-heads", "2", "--head-dim", "64", "--page-size",
			"16", "--heartbeat-interval", HEARTBEAT.toMillis() + "ms" };
	private static final String ROOM_SERVED = "room \\d+: \\d+ pages";
	/**
	 * Why a room of the long-running decode may fail while prefill is away: refused by the draining rank, cut with it,
	 * or asked of a port nobody listens on any more. Nothing else: a byte that differs or a timeout is a failure.
	 */
	private static final Pattern AWAY = Pattern.compile("is draining and admits no new rooms|drained \\(.*\\) and is "
			+ "gone|Lost connection with prefill rank|connection refused by|Connection reset");

	private final Hosts hosts;
	private final List<Child> started = new ArrayList<>();
	private String bootstrap;
	private int runs;

	private RestartScenario(Hosts hosts) {
		this.hosts = hosts;
	}

	/**
	 * Runs the scenario; every process it started is stopped when it returns or throws.
	 *
	 * @param hosts where the roles run
	 * @param shortRuns decode processes run one right after another before the first restart, at least 1
	 * @param restarts how each prefill process is stopped before the next one starts (one short run after each)
	 */
	public static void run(Hosts hosts, int shortRuns, Stop... restarts) throws Exception {
		RestartScenario s = new RestartScenario(hosts);
		try {
			s.play(shortRuns, restarts);
		}
		finally {
			s.stopAll();
		}
	}

	private void play(int shortRuns, Stop... restarts) throws Exception {
		Child bootstrapServer = start(BOOTSTRAP, "bootstrap", "bootstrap", "--host", hosts.address(BOOTSTRAP),
				"--port", "0");
		bootstrap = bootstrapServer.awaitLine("kvferry bootstrap: listening on (\\S+)", START).group(1);
		Child prefill = startPrefill(1);
		prefill.awaitLine("kvferry prefill: ready", START);
		// Long-running: keeps asking for rooms whatever fails, as a decode instance in service does. The short runs
		// start beside it at once, each right after the one before exited.
		Child standing = start(DECODE, "decode-standing", args("decode", "--bootstrap", bootstrap, "--requests",
				"100000", "--concurrency", "2", "--min-tokens", "16", "--max-tokens", "64", "--keep-going", "--json"));
		for (int i = 0; i < shortRuns; i++) {
			shortRun(prefill);
		}
		assertThat(standing.isAlive()).as(standing.output()).isTrue();
		for (int i = 0; i < restarts.length; i++) {
			stop(prefill, restarts[i]);
			prefill = startPrefill(i + 2);
			Child.Seen ready = prefill.awaitSeen("kvferry prefill: ready", START);
			Child.Seen served = prefill.awaitSeen(ROOM_SERVED, START);
			Duration after = Duration.ofNanos(served.nanos() - ready.nanos());
			System.out.printf(Locale.ROOT, "restart after %s: the new prefill served the standing decode's first "
					+ "room %d ms after it registered (heartbeat %d ms)%n", restarts[i], after.toMillis(),
					HEARTBEAT.toMillis());
			assertThat(after).as("from the restarted prefill's registration to its first room of the standing decode"
					+ "\n" + prefill.output()).isLessThan(HEARTBEAT.multipliedBy(2));
			shortRun(prefill);
		}
		standing.terminate();
		int status = standing.awaitExit(RUN);
		JsonNode j = JSON.readTree(standing.stdout());
		int failures = j.get("failures").asInt();
		assertThat(j.get("completed").asInt()).as(standing.output()).isPositive();
		assertThat(status).as(standing.output()).isEqualTo(failures == 0 ? 0 : 1);
		for (JsonNode reason : j.get("failure_reasons")) {
			assertThat(reason.asText()).as("a room of the standing decode failed for another reason than the "
					+ "prefill being away\n" + standing.output()).containsPattern(AWAY);
		}
	}

	/** One decode process start to finish: it must verify every room. */
	private void shortRun(Child prefill) throws Exception {
		int rooms = 16;
		Child decode = start(DECODE, "decode-" + ++runs, args("decode", "--bootstrap", bootstrap, "--requests",
				String.valueOf(rooms), "--concurrency", "4", "--min-tokens", "16", "--max-tokens", "256", "--json"));
		int status = decode.awaitExit(RUN);
		assertThat(status).as(decode.output() + prefill.output()).isZero();
		JsonNode j = JSON.readTree(decode.stdout());
		assertThat(j.get("verified").asBoolean()).as(decode.output()).isTrue();
		assertThat(j.get("completed").asInt()).isEqualTo(rooms);
		assertThat(j.get("failures").asInt()).isZero();
	}

	private Child startPrefill(int n) throws Exception {
		return start(PREFILL, "prefill-" + n, args("prefill", "--bootstrap", bootstrap, "--host",
				hosts.address(PREFILL), "--verbose"));
	}

	private static void stop(Child prefill, Stop how) throws Exception {
		if (how == Stop.KILL) {
			prefill.kill();
			return;
		}
		prefill.terminate();
		assertThat(prefill.awaitExit(RUN)).as(prefill.output()).isZero();
		Matcher drained = Pattern.compile("kvferry prefill: drained in \\d+ ms").matcher(prefill.stdout());
		assertThat(drained.find()).as(prefill.output()).isTrue();
	}

	private Child start(String role, String name, String... args) throws Exception {
		Child c = hosts.start(role, name, args);
		started.add(c);
		return c;
	}

	private static String[] args(String... parts) {
		List<String> all = new ArrayList<>(List.of(parts));
		all.addAll(List.of(SHAPE));
		return all.toArray(String[]::new);
	}

	/** Newest first: decodes before the prefill they use, the bootstrap server last. */
	private void stopAll() {
		for (int i = started.size() - 1; i >= 0; i--) {
			started.get(i).close();
		}
	}
}
