package io.kvferry.cli.netns;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.test.Child;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Hosts of two network interfaces each, every interface on a subnet and a switch bridge of its own (two interface
 * pairs between any two hosts, see {@link NetnsHosts#create(int, int, String...)}), with the bootstrap server, prefill
 * and decode as processes: prefill advertises one address per interface and decode deals its stripes over both pairs,
 * so one room fills both capped links; a pair's link cut mid-room fails the rooms typed within two heartbeats.
 * Skipped, with the reason, where namespaces cannot be made (not root, no iproute2).
 */
@Timeout(180)
class NetnsNicsTest extends NetnsRoleTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START = Duration.ofSeconds(60);
	private static final Duration RUN = Duration.ofSeconds(90);
	/** Jumbo frames, as on KV back-end networks: the headers take 0.7 % of a capped link. */
	private static final int MTU = 9000;
	private static final int NICS = 2;
	/**
	 * The cap of each interface pair, in bits per second: slow enough that the links, not two loaded cores, bound the
	 * room (one room fills 99 % of one such link, see NetnsRolesTest), so that the aggregate measures the dealing.
	 */
	private static final long CAP = 10_000_000;
	/** 10 MiB: about eight seconds over one capped pair, four over two. */
	private static final int ROOM_TOKENS = 640;
	/** Two stripes: one on each pair. */
	private static final String STRIPES = "2";
	private static final Duration HEARTBEAT = Duration.ofSeconds(1);
	/** The loss's way from the child's log to this test on a loaded machine, beyond two heartbeat intervals. */
	private static final Duration REPORT_SLACK = Duration.ofMillis(750);
	/** A pair slow enough that the cut lands mid-room: two rooms of 16 MiB take about ten seconds over both. */
	private static final long SLOW_LINK = 25_000_000;

	private String startBootstrap(NetnsHosts net) throws Exception {
		Child bootstrap = track(net.start(BOOTSTRAP, "bootstrap", "bootstrap", "--host", net.address(BOOTSTRAP),
				"--port", "0"));
		return bootstrap.awaitLine("kvferry bootstrap: listening on (\\S+)", START).group(1);
	}

	private Child startPrefill(NetnsHosts net, String name, String... extra) throws Exception {
		Child prefill = track(net.start(PREFILL, name, args(extra)));
		prefill.awaitLine("kvferry prefill: ready", START);
		return prefill;
	}

	/** @return both of the prefill host's addresses, its eth0's first */
	private static String bothInterfaces(NetnsHosts net) {
		return net.address(PREFILL, 0) + "," + net.address(PREFILL, 1);
	}

	/** One warmed-up room of {@link #ROOM_TOKENS} alone on the links: its summary. */
	private JsonNode oneRoom(NetnsHosts net, String bootstrap, String name, Child prefill) throws Exception {
		Child decode = track(net.start(DECODE, name, args("decode", "--bootstrap", bootstrap, "--stripes", STRIPES,
				"--warmup", "1", "--requests", "1", "--concurrency", "1", "--min-tokens", "16", "--max-tokens",
				String.valueOf(ROOM_TOKENS), "--json")));
		int status = decode.awaitExit(RUN);
		assertThat(status).as(decode.output() + prefill.output()).isZero();
		JsonNode j = JSON.readTree(decode.stdout());
		assertThat(j.get("verified").asBoolean()).as(decode.output()).isTrue();
		assertThat(j.get("completed").asInt()).isEqualTo(1);
		return j;
	}

	private static double bitsPerSecond(JsonNode summary) {
		return summary.get("bytes").asLong() * 8.0 / summary.get("seconds").asDouble();
	}

	@Test
	void oneRoomOverTwoInterfacePairsMovesAtLeastOnePointEightTimesWhatOnePairMoves() throws Exception {
		NetnsHosts net = track(NetnsHosts.create(MTU, NICS, BOOTSTRAP, PREFILL, DECODE));
		String bootstrap = startBootstrap(net);
		for (int k = 0; k < NICS; k++) {
			net.capEgress(PREFILL, k, CAP);
		}
		String pool = String.valueOf(ROOM_TOKENS);

		// One pair: the rank advertises its eth0 alone, so both stripes take it.
		Child one = startPrefill(net, "prefill-one-nic", "prefill", "--bootstrap", bootstrap, "--advertise-host",
				net.address(PREFILL, 0), "--pool-tokens", pool);
		long eth1Before = net.txBytes(PREFILL, 1);
		JsonNode single = oneRoom(net, bootstrap, "decode-one-nic", one);
		long eth1Single = net.txBytes(PREFILL, 1) - eth1Before;
		one.kill();
		one.awaitExit(START);

		// Two pairs: the same rank on a new process advertises both, and decode deals its two stripes over them.
		Child two = startPrefill(net, "prefill-two-nics", "prefill", "--bootstrap", bootstrap, "--advertise-host",
				bothInterfaces(net), "--pool-tokens", pool);
		two.awaitLine("interfaces " + Pattern.quote(net.address(PREFILL, 0) + ", " + net.address(PREFILL, 1)), START);
		eth1Before = net.txBytes(PREFILL, 1);
		JsonNode dual = oneRoom(net, bootstrap, "decode-two-nics", two);
		long eth1Dual = net.txBytes(PREFILL, 1) - eth1Before;

		double a = bitsPerSecond(single);
		double b = bitsPerSecond(dual);
		System.out.printf(Locale.ROOT, "one room of %,d bytes, %s stripes, each pair capped at %.0f Mbit/s: one pair "
				+ "%.2f Mbit/s (%.3f s), two pairs %.2f Mbit/s (%.3f s) = %.2fx; eth1 carried %,d bytes with one pair, "
				+ "%,d with two%n", dual.get("bytes").asLong(), STRIPES, CAP / 1e6, a / 1e6,
				single.get("seconds").asDouble(), b / 1e6, dual.get("seconds").asDouble(), b / a, eth1Single, eth1Dual);
		assertThat(eth1Single).as("one pair: eth1 idle").isLessThan(dual.get("bytes").asLong() / 100);
		assertThat(eth1Dual).as("two pairs: eth1's share of the room").isGreaterThan(dual.get("bytes").asLong() * 2 / 5);
		assertThat(b / a).as("two pairs against one").isGreaterThanOrEqualTo(1.8);
	}

	@Test
	void aPairsLinkCutMidRoomFailsTheRoomsTypedWithinTwoHeartbeats() throws Exception {
		NetnsHosts net = track(NetnsHosts.create(MTU, NICS, BOOTSTRAP, PREFILL, DECODE));
		String bootstrap = startBootstrap(net);
		for (int k = 0; k < NICS; k++) {
			net.capEgress(PREFILL, k, SLOW_LINK);
		}
		String heartbeat = HEARTBEAT.toMillis() + "ms";
		Child prefill = startPrefill(net, "prefill", "prefill", "--bootstrap", bootstrap, "--advertise-host",
				bothInterfaces(net), "--heartbeat-interval", heartbeat);
		Child decode = track(net.start(DECODE, "decode", args("decode", "--bootstrap", bootstrap, "--stripes", STRIPES,
				"--requests", "2", "--concurrency", "2", "--min-tokens", "1024", "--max-tokens", "1024",
				"--heartbeat-interval", heartbeat, "--json")));
		net.awaitSent(PREFILL, 1, net.txBytes(PREFILL, 1), 2 << 20, decode, START);

		// The second pair's cable is pulled; the first pair stays up.
		long cut = System.nanoTime();
		net.cutLink(PREFILL, 1);
		// Decode closes the session when its stripe on eth1 hears no heartbeat, or when prefill, whose own stripe
		// there heard none, closes the stripe on eth0: whichever comes first, the rooms fail with it.
		Child.Seen closing = decode.awaitSeen(" closing: (no heartbeat from|connection closed by peer) ", RUN);
		Child.Seen failed = decode.awaitSeen("kvferry decode: failed: ", RUN);
		Duration took = Duration.ofNanos(closing.nanos() - cut);
		System.out.printf(Locale.ROOT, "eth1's link cut mid-room: decode closed the session after %d ms (%s), its "
				+ "summary of the failed rooms came %d ms later (heartbeat %s)%n", took.toMillis(),
				closing.match().group(1), (failed.nanos() - closing.nanos()) / 1_000_000, heartbeat);
		assertThat(took).as("decode's detection").isLessThan(HEARTBEAT.multipliedBy(2).plus(REPORT_SLACK));

		assertThat(decode.awaitExit(RUN)).as(decode.output()).isEqualTo(1);
		JsonNode j = JSON.readTree(decode.stdout());
		assertThat(j.get("failures").asInt()).as(decode.output()).isEqualTo(2);
		assertThat(j.get("failure_reasons").toString()).as(decode.output())
				.contains("Lost connection with prefill rank " + net.address(PREFILL, 0));
		// Prefill fails its rooms too, naming the decode connection it lost.
		String decodeAt = "(" + Pattern.quote(net.address(DECODE, 0)) + "|" + Pattern.quote(net.address(DECODE, 1)) + ")";
		for (int i = 0; i < 2; i++) {
			prefill.awaitLine("room \\d+ failed: .*connection \\S+ to " + decodeAt + ":\\d+ closed", RUN);
		}
	}
}
