package io.kvferry.cli.netns;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.test.Child;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Idle connections between prefill and decode on hosts of their own (network namespaces, see {@link NetnsHosts}),
 * forgotten by a middlebox while idle: from then on every packet of those flows is dropped on the way, silently, as a
 * NAT whose mapping expired drops them. The heartbeats find the dead connections on both sides within two intervals,
 * both close them, and the rooms after the idle spell dial new connections and all succeed, the first one about as
 * fast as the others. Skipped, with the reason, where namespaces cannot be made (not root, no iproute2).
 */
@Timeout(120)
class NetnsIdleTest extends NetnsRoleTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START = Duration.ofSeconds(60);
	private static final Duration RUN = Duration.ofSeconds(60);
	private static final int MTU = 1500;
	private static final Duration HEARTBEAT = Duration.ofSeconds(1);
	/** Long enough for the loss to be found well before the rooms come (two intervals, plus the test's own steps). */
	private static final Duration IDLE = Duration.ofSeconds(8);
	/** What the report of the loss may take beyond two intervals: the log line's way from the child to this test. */
	private static final Duration REPORT_SLACK = Duration.ofMillis(1000);
	/** What the first room after idle may take beyond the others' median on a busy 2-core machine. */
	private static final double SLACK_MS = 500;
	private static final int ROOMS = 12;

	@Test
	void idleFlowsAMiddleboxDropsAreFoundByHeartbeatsAndTheRoomsAfterwardsAllSucceed() throws Exception {
		NetnsHosts net = track(NetnsHosts.create(MTU, BOOTSTRAP, PREFILL, DECODE));
		String heartbeat = HEARTBEAT.toMillis() + "ms";
		Child bootstrapProcess = track(net.start(BOOTSTRAP, "bootstrap", "bootstrap", "--host",
				net.address(BOOTSTRAP), "--port", "0"));
		String bootstrap = bootstrapProcess.awaitLine("kvferry bootstrap: listening on (\\S+)", START).group(1);
		Child prefill = track(net.start(PREFILL, "prefill", args("prefill", "--bootstrap", bootstrap, "--host",
				net.address(PREFILL), "--heartbeat-interval", heartbeat)));
		int kvPort = Integer.parseInt(prefill.awaitLine("kvferry prefill: ready.* listening on "
				+ Pattern.quote(net.address(PREFILL)) + ":(\\d+)", START).group(1));
		// Warm-up rooms open the connections; then they idle, carrying only heartbeats, before the measured rooms.
		Child decode = track(net.start(DECODE, "decode", args("decode", "--bootstrap", bootstrap, "--warmup", "4",
				"--idle", IDLE.toMillis() + "ms", "--requests", String.valueOf(ROOMS), "--concurrency", "1",
				"--min-tokens", "64", "--max-tokens", "64", "--heartbeat-interval", heartbeat, "--json")));
		decode.awaitLine("kvferry decode: idle for", START);

		String connections = net.connections(DECODE);
		List<Integer> ports = NetnsHosts.establishedPorts(connections, net.address(PREFILL), kvPort);
		assertThat(ports).as("decode's idle connections to prefill port %d among:%n%s", kvPort, connections)
				.isNotEmpty();
		long forgotAt = System.nanoTime();
		net.dropFlows(DECODE, PREFILL, ports);

		String lost = "closing: no heartbeat from ";
		Child.Seen decodeSaw = decode.awaitSeen(lost + Pattern.quote(net.address(PREFILL)), RUN);
		Child.Seen prefillSaw = prefill.awaitSeen(lost + Pattern.quote(net.address(DECODE)), RUN);
		Child.Seen idleOver = decode.awaitSeen("kvferry decode: idle over", RUN);
		Duration decodeTook = Duration.ofNanos(decodeSaw.nanos() - forgotAt);
		Duration prefillTook = Duration.ofNanos(prefillSaw.nanos() - forgotAt);
		Duration bound = HEARTBEAT.multipliedBy(2).plus(REPORT_SLACK);
		assertThat(decodeTook).as("decode's detection").isLessThan(bound);
		assertThat(prefillTook).as("prefill's detection").isLessThan(bound);
		assertThat(decodeSaw.nanos()).as("the loss was found before the first room after idle")
				.isLessThan(idleOver.nanos());

		int status = decode.awaitExit(RUN);
		String context = decode.output() + prefill.output();
		assertThat(status).as(context).isZero();
		JsonNode j = JSON.readTree(decode.stdout());
		assertThat(j.get("verified").asBoolean()).as(context).isTrue();
		assertThat(j.get("completed").asInt()).isEqualTo(ROOMS);
		assertThat(j.get("failures").asInt()).isZero();
		assertThat(net.droppedPackets(DECODE) + net.droppedPackets(PREFILL)).as("the middlebox dropped the flows' "
				+ "packets").isPositive();
		double median = j.get("p50_ms").asDouble();
		double slowest = j.get("max_ms").asDouble();
		System.out.printf(Locale.ROOT, "middlebox dropped %d idle flows: decode found it after %d ms, prefill after %d "
				+ "ms (heartbeat %s); then %d rooms one at a time: median %.1f ms, slowest (the first, which dialled "
				+ "anew, or another) %.1f ms%n", ports.size(), decodeTook.toMillis(), prefillTook.toMillis(), heartbeat,
				ROOMS, median, slowest);
		// One room at a time: the slowest bounds the first.
		assertThat(slowest).as("the slowest room after idle against the median").isLessThanOrEqualTo(Math.max(2 * median,
				median + SLACK_MS));
	}
}
