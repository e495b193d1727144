package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVStatusEvent;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.Child;
import io.kvferry.transport.netty.RestartLoad.Outcome;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/**
 * A rank killed with SIGKILL under load and started again as a new process, twenty times, against a real bootstrap
 * server: a prefill rank on the same port each time (the listener reuses the address), and a decode rank. Every room
 * of the rank that stays either succeeds with every byte checked, or fails because the peer went (its connection was
 * lost, nobody listened while it restarted, or it was replaced as restarted); the first room after a prefill restart
 * succeeds within two heartbeat intervals of the new process being ready, and a restarted decode's first room
 * succeeds.
 */
@Timeout(900)
class PeerRestartProcessTest {

	private static final Duration HEARTBEAT = Duration.ofSeconds(1);
	/**
	 * Restarts of each role, {@code -Dkvferry.test.restarts=N}; 5 by default, as every restart starts a JVM (about
	 * 7 s each on a loaded two-core machine).
	 */
	private static final int RESTARTS = Integer.getInteger("kvferry.test.restarts", 5);
	/** Rooms each process serves before it is killed: the kill always finds rooms in flight. */
	private static final int SERVED = 3;
	private static final Duration START = Duration.ofSeconds(60);
	private static final Duration T = Duration.ofSeconds(30);
	private static final Duration CLOSE = Duration.ofSeconds(10);
	/** Shorter than any room timeout: a room held up by stale state on the peer would take longer. */
	private static final Duration STALE = Duration.ofSeconds(10);
	/**
	 * Why a room may fail while its peer is killed and restarted (refused at once once its connections failed again
	 * and again, too); anything else is a failure of the test.
	 */
	private static final Set<FailureCause> PEER_WENT = EnumSet.of(FailureCause.CONNECTION_LOST,
			FailureCause.BOOTSTRAP, FailureCause.PEER_RESTARTED, FailureCause.PEER_UNAVAILABLE);

	@Test
	void aPrefillKilledAndRestartedOnItsOwnPortIsANewPeerAndServesAtOnce() throws Exception {
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		RankMemory memory = RestartLoad.decodeMemory();
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(memory.kvArgs())
				.transport(RestartLoad.transport(HEARTBEAT)).bootstrapClient(ReactorBootstrapClient.create())
				.stripes(1).startNow();
		Sinks.Many<Outcome> outcomes = Sinks.many().replay().all();
		Disposable load = RestartLoad.decode(decode, memory, bootstrap.address(), 1)
				.subscribe(o -> outcomes.emitNext(o, Sinks.EmitFailureHandler.busyLooping(T)));
		List<Long> recoveries = new ArrayList<>();
		List<String> incarnations = new ArrayList<>();
		int port = 0;
		try {
			for (int i = 0; i <= RESTARTS; i++) {
				long killed = System.nanoTime();
				try (Child prefill = Child.startMain("prefill-" + i, RestartPeerMain.class, "prefill",
						bootstrap.address().toString(), String.valueOf(port), String.valueOf(HEARTBEAT.toMillis()))) {
					Child.Seen ready = prefill.awaitSeen("^ready (\\d+) (\\w+)$", START);
					int bound = Integer.parseInt(ready.match().group(1));
					assertThat(port == 0 || bound == port).as("restarted on the same port").isTrue();
					port = bound;
					incarnations.add(ready.match().group(2));
					Outcome first = served(outcomes.asFlux(), ready.nanos()).next().block(T);
					assertThat(first).as(prefill.output()).isNotNull();
					if (i > 0) {
						recoveries.add(report("prefill", i, first.endNanos() - ready.nanos(),
								first.endNanos() - killed));
					}
					served(outcomes.asFlux(), ready.nanos()).take(SERVED).blockLast(T);
					prefill.kill();
				}
			}
		}
		finally {
			load.dispose();
			decode.disposeNow(CLOSE);
			bootstrap.disposeNow();
		}
		assertThat(incarnations).doesNotHaveDuplicates();
		List<Outcome> all = outcomes.asFlux().take(Duration.ofMillis(100)).collectList().block(T);
		assertEveryRoomSucceededOrLostItsPeer(all);
		assertThat(recoveries).hasSize(RESTARTS).allSatisfy(r -> assertThat(r).as("ms from the new prefill being "
				+ "ready to decode's first room served by it").isLessThan(HEARTBEAT.multipliedBy(2).toMillis()));
	}

	@Test
	void aDecodeKilledAndRestartedIsANewPeerAndItsFirstRoomSucceeds() throws Exception {
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		RankMemory memory = RestartLoad.prefillMemory();
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(memory.kvArgs())
				.transport(RestartLoad.transport(HEARTBEAT)).bootstrapClient(ReactorBootstrapClient.create())
				.bootstrapAddress(bootstrap.address()).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		Disposable engine = RestartLoad.serve(prefill, memory);
		Sinks.Many<KVStatusEvent> failed = Sinks.many().replay().all();
		Disposable events = prefill.events().filter(e -> e.current() == KVPoll.FAILED)
				.subscribe(e -> failed.emitNext(e, Sinks.EmitFailureHandler.busyLooping(T)));
		List<Long> recoveries = new ArrayList<>();
		try {
			for (int i = 0; i <= RESTARTS; i++) {
				long killed = System.nanoTime();
				try (Child decode = Child.startMain("decode-" + i, RestartPeerMain.class, "decode",
						bootstrap.address().toString(), String.valueOf((i + 1) * 1_000_000L),
						String.valueOf(HEARTBEAT.toMillis()))) {
					Child.Seen ready = decode.awaitSeen("^ready \\w+$", START);
					Child.Seen first = decode.awaitSeen("^(ok|failed) ", T);
					assertThat(first.match().group(1)).as(decode.output()).isEqualTo("ok");
					recoveries.add(report("decode", i, first.nanos() - ready.nanos(), first.nanos() - killed));
					for (int k = 0; k < SERVED; k++) {
						decode.awaitSeen("^ok ", T);
					}
					decode.kill();
					// Every room the decode process saw end before it was killed succeeded with every byte checked.
					assertThat(decode.stdout()).as(decode.output()).doesNotContain("\nfailed ");
				}
			}
		}
		finally {
			engine.dispose();
			events.dispose();
			prefill.disposeNow(CLOSE);
			bootstrap.disposeNow();
		}
		List<KVStatusEvent> lost = failed.asFlux().take(Duration.ofMillis(100)).collectList().block(T);
		assertThat(lost).allSatisfy(e -> {
			assertThat(e.cause()).as(e.reason()).isIn(PEER_WENT);
			assertThat(e.reason()).contains("decode");
		});
		// The new decode's first room includes its first connection and handshake in a young JVM (1.5 to 3.7 s on a
		// loaded two-core machine, heartbeat 1 s): bounded here by what a room waiting on stale prefill state would
		// exceed, the waiting timeout, rather than by two heartbeat intervals.
		assertThat(recoveries).hasSize(RESTARTS + 1).allSatisfy(r -> assertThat(r).as("ms from the new decode being "
				+ "ready to its first room").isLessThan(STALE.toMillis()));
	}

	/** @return rooms served, in order, that ended after {@code nanos} */
	private static Flux<Outcome> served(Flux<Outcome> outcomes, long nanos) {
		return outcomes.filter(o -> o.ok() && o.endNanos() > nanos);
	}

	private static long report(String role, int run, long fromReadyNanos, long fromKillNanos) {
		long ms = Duration.ofNanos(fromReadyNanos).toMillis();
		System.out.printf(Locale.ROOT, "%s restart %d: first room served %d ms after the new process was ready "
				+ "(%d ms after the old one was killed; heartbeat %d ms)%n", role, run, ms,
				Duration.ofNanos(fromKillNanos).toMillis(), HEARTBEAT.toMillis());
		return ms;
	}

	private static void assertEveryRoomSucceededOrLostItsPeer(List<Outcome> all) {
		assertThat(all).anyMatch(Outcome::ok);
		for (Outcome o : all) {
			if (!o.ok()) {
				assertThat(o.cause()).as("room %d: %s", o.room(), o.reason()).isIn(PEER_WENT);
			}
		}
		long failures = all.stream().filter(o -> !o.ok()).count();
		System.out.printf(Locale.ROOT, "%d rooms: %d served, %d failed while the peer was away%n", all.size(),
				all.size() - failures, failures);
	}
}
