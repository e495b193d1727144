package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.netty.channel.Channel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * Connections that carried nothing for a long while still serve the next rooms at once: every room of a burst after
 * the idle period succeeds byte-exact, and the first one takes about as long as a warm one (within twice a warm room's
 * median, or a fixed slack for a noisy machine: the failures this guards against cost seconds, not milliseconds).
 * Idle is tried two ways: a real minute over TCP, and a middlebox that silently forgets the idle flows (a NAT whose
 * mapping expired): the heartbeats find the dead connections, both sides close them, and the first room dials new
 * ones.
 */
class IdleLinkIT {

	/** 8 layers of Llama-3-8B heads: 16 KiB per page per layer buffer. */
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(8);
	private static final int ROOM_PAGES = 4;
	private static final int WARM_ROOMS = 8;
	private static final int BURST_ROOMS = 16;
	/** What the first room after idle may take beyond a warm one on a busy 2-core machine. */
	private static final Duration SLACK = Duration.ofMillis(250);
	/** The heartbeat of the middlebox test: short, so that the dead flows are found in about a second. */
	private static final Duration HEARTBEAT = Duration.ofMillis(500);
	/** Two heartbeat intervals (the dead-peer rule) plus slack for a busy machine's timers. */
	private static final Duration DETECTION_BOUND = HEARTBEAT.multipliedBy(2).plusMillis(750);
	private static final Duration REAL_IDLE = Duration.ofSeconds(61);
	/** Connections decode keeps to each prefill rank (the rig's managers use the default). */
	private static final int STRIPES = DecodeSpec.DEFAULT_STRIPES;

	private long nextRoom = 1;

	@Test
	@Timeout(240)
	void aMinuteIdleOverRealTcpKeepsTheConnectionsAndTheFirstRoomIsAsFastAsAWarmOne() {
		// The default heartbeat, as in production: the idle minute is twelve intervals.
		try (FaultRig rig = FaultRig.start(SHAPE, 1, 1, 512, 64, NettyKVTransport.create(), spec -> spec)) {
			long warm = warmMedianNanos(rig);
			int connections = rig.transport.accepted().size();

			idle(REAL_IDLE);

			burstAfterIdle(rig, warm, "after " + REAL_IDLE.toSeconds() + " s idle");
			assertThat(rig.transport.accepted()).as("the heartbeats kept the connections: none was replaced")
					.hasSize(connections)
					.allMatch(NettyKVConnection::isActive);
		}
	}

	@Test
	void flowsAMiddleboxForgotWhileIdleAreFoundByHeartbeatsAndReplacedAndTheFirstRoomSucceeds() {
		// Prefill must not register its real port again over the middlebox's (re-registration overwrites).
		try (FaultRig rig = FaultRig.start(SHAPE, 1, 1, 512, 64, NettyKVTransport.create().heartbeatInterval(HEARTBEAT),
				spec -> spec instanceof PrefillSpec p ? p.reregisterInterval(Duration.ZERO) : spec)) {
			PrefillKVManager prefill = rig.cluster.prefillManagers().get(0).get(0);
			try (TcpProxy middlebox = TcpProxy.start(prefill.endpoint())) {
				HostPort proxied = middlebox.address();
				StepVerifier.create(rig.client.register(rig.bootstrap(), PrefillRegistration.prefill(prefill.layout(),
						proxied.host(), proxied.port(), SHAPE.pageSize())))
						.expectComplete()
						.verify(T);
				long warm = warmMedianNanos(rig);
				assertThat(middlebox.accepted()).as("one decode session through the middlebox").isEqualTo(STRIPES);

				// Idle for a few heartbeats, then the middlebox forgets the flows: nothing passes, nothing is reset.
				idle(HEARTBEAT.multipliedBy(3));
				long forgotAt = System.nanoTime();
				List<Channel> forgotten = middlebox.blackhole();
				assertThat(forgotten).hasSize(2 * STRIPES);
				assertThat(TcpProxy.awaitClosed(forgotten, DETECTION_BOUND.multipliedBy(4)))
						.as("decode and prefill closed every forgotten connection").isTrue();
				Duration found = Duration.ofNanos(System.nanoTime() - forgotAt);
				System.out.printf(Locale.ROOT, "idle flows dropped by the middlebox: both ends closed them after %d ms "
						+ "(heartbeat %d ms)%n", found.toMillis(), HEARTBEAT.toMillis());
				assertThat(found).as("the heartbeats' detection").isLessThan(DETECTION_BOUND);

				burstAfterIdle(rig, warm, "after the middlebox dropped the idle flows");
				assertThat(middlebox.accepted()).as("the first room dialled one new session, which served the burst")
						.isEqualTo(2 * STRIPES);
			}
		}
	}

	/** @return the median latency of rooms run one after another on a connected, warmed-up cluster */
	private long warmMedianNanos(FaultRig rig) {
		// The first room connects; the others warm the JIT.
		for (int i = 0; i < WARM_ROOMS; i++) {
			run(rig);
		}
		List<Long> warm = new ArrayList<>();
		for (int i = 0; i < WARM_ROOMS; i++) {
			warm.add(run(rig).latencyNanos());
		}
		warm.sort(null);
		return warm.get(warm.size() / 2);
	}

	/** Runs one room, then a burst at once: all succeed, and the first one is about as fast as a warm one. */
	private void burstAfterIdle(FaultRig rig, long warmNanos, String when) {
		long first = run(rig).latencyNanos();
		List<RoomResult> burst = Flux.range(0, BURST_ROOMS)
				.flatMap(i -> Mono.defer(() -> rig.cluster.run(room(), ROOM_PAGES * SHAPE.pageSize(), 2,
						new Random(i))), BURST_ROOMS)
				.collectList()
				.block(T);
		System.out.printf(Locale.ROOT, "%s: first room %.2f ms, warm median %.2f ms; a burst of %d rooms followed%n",
				when, first / 1e6, warmNanos / 1e6, BURST_ROOMS);
		assertThat(burst).hasSize(BURST_ROOMS).allSatisfy(r -> assertThat(r.failure()).as("room %d", r.room())
				.isNull());
		assertThat(Duration.ofNanos(first)).as("the first room %s, against a warm median of %.2f ms", when,
				warmNanos / 1e6).isLessThanOrEqualTo(Duration.ofNanos(Math.max(2 * warmNanos,
						warmNanos + SLACK.toNanos())));
	}

	private RoomResult run(FaultRig rig) {
		long room = room();
		RoomResult r = rig.cluster.run(room, ROOM_PAGES * SHAPE.pageSize(), 2, new Random(room)).block(T);
		assertThat(r).isNotNull();
		assertThat(r.failure()).as("room %d", room).isNull();
		return r;
	}

	private synchronized long room() {
		return nextRoom++;
	}

	/** The links carry nothing for {@code period}: the condition under test, not a wait for something to happen. */
	private static void idle(Duration period) {
		StepVerifier.create(Mono.delay(period)).expectNextCount(1).expectComplete().verify(period.plus(T));
	}
}
