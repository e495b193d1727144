package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVPoll;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import io.kvferry.harness.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import io.netty.channel.Channel;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * A prefill rank registered with two endpoints, as a host of two network interfaces is, each a TCP relay on loopback
 * (an interface pair): decode deals each session's stripes over both, so a room's bytes cross both; a pair that goes
 * silent mid-room fails the room typed within two heartbeats, and one that refuses connections fails the session's
 * setup, never leaving a room waiting.
 */
class SeveralInterfacesIT {

	/** 8 layers of Llama-3-8B heads: 32 KiB per page per layer buffer. */
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(8);
	private static final int STRIPES = 4;
	/** 64 pages: 32 MiB over 16 layer buffers (K and V of 8 layers) of 2 MiB each, so that four stripes get four each. */
	private static final int ROOM_PAGES = 64;
	private static final long ROOM_BYTES = (long) ROOM_PAGES * SHAPE.layers() * 2 * SHAPE.itemLen(1);
	private static final Duration HEARTBEAT = Duration.ofMillis(500);
	/** Two heartbeat intervals (the dead-peer rule) plus slack for a loaded machine's timers. */
	private static final Duration DETECTION_BOUND = HEARTBEAT.multipliedBy(2).plusMillis(750);

	private static FaultRig rig() {
		// The rank must not register its real endpoint again over the relays'.
		return FaultRig.start(SHAPE, 1, 1, 4 * ROOM_PAGES, 8, NettyKVTransport.create().heartbeatInterval(HEARTBEAT),
				spec -> spec instanceof PrefillSpec p ? p.reregisterInterval(Duration.ZERO)
						: spec instanceof DecodeSpec d ? d.stripes(STRIPES) : spec);
	}

	/** Registers the rank at {@code first}, with {@code second} as its further interface's endpoint. */
	private static void register(FaultRig rig, PrefillKVManager rank, HostPort first, HostPort second) {
		StepVerifier.create(rig.client.register(rig.bootstrap(), PrefillRegistration.prefill(rank.layout(), first.host(),
				first.port(), SHAPE.pageSize()).withMoreEndpoints(List.of(second)))
				.then(rig.client.rankRoute(rig.bootstrap(), 0, 0, 0, 0)))
				.expectNext(new RankRoute(first, PrefillRegistration.UNKNOWN_INCARNATION, List.of(second)))
				.expectComplete()
				.verify(T);
	}

	private static LiveRoom open(FaultRig rig, long id, int slot) {
		int[] pages = range(slot * ROOM_PAGES, (slot + 1) * ROOM_PAGES);
		return LiveRoom.open(rig.bootstrap(), id, rig.cluster.prefillManagers().get(0),
				rig.cluster.prefillMemory().get(0), rig.cluster.decodeManagers(), rig.cluster.decodeMemory(), pages, pages,
				slot, slot);
	}

	@Test
	void aRoomsBytesCrossBothInterfacesAndLandByteExact() {
		try (FaultRig rig = rig()) {
			PrefillKVManager rank = rig.cluster.prefillManagers().get(0).get(0);
			try (TcpProxy first = TcpProxy.start(rank.endpoint()); TcpProxy second = TcpProxy.start(rank.endpoint())) {
				register(rig, rank, first.address(), second.address());
				LiveRoom room = open(rig, 1, 0);
				room.sendAll();
				StepVerifier.create(room.completion()).expectComplete().verify(T);
				assertThat(room.verify()).isNull();

				assertThat(first.accepted()).as("stripes 0 and 2").isEqualTo(STRIPES / 2);
				assertThat(second.accepted()).as("stripes 1 and 3").isEqualTo(STRIPES / 2);
				long a = first.relayedToClient();
				long b = second.relayedToClient();
				System.out.printf(Locale.ROOT, "one room of %,d bytes over two interfaces: %,d and %,d bytes%n",
						ROOM_BYTES, a, b);
				assertThat(a + b).as("the room and its control frames").isGreaterThanOrEqualTo(ROOM_BYTES);
				// Dealt evenly over the stripes, so evenly over the interfaces, to a layer buffer or so.
				assertThat(Math.min(a, b)).as("the share of the less loaded interface").isGreaterThan(ROOM_BYTES * 2 / 5);
				assertThat(room.receivers.get(0).path().stripes()).isEqualTo(STRIPES);
			}
		}
	}

	@Test
	void aSecondInterfaceGoingSilentMidRoomFailsItTypedWithinTwoHeartbeatsAndTheNextSessionUsesBothAgain() {
		try (FaultRig rig = rig()) {
			PrefillKVManager rank = rig.cluster.prefillManagers().get(0).get(0);
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			try (TcpProxy first = TcpProxy.start(rank.endpoint()); TcpProxy second = TcpProxy.start(rank.endpoint())) {
				register(rig, rank, first.address(), second.address());
				LiveRoom room = open(rig, 1, 0);
				room.send(0, ROOM_PAGES / 2);
				awaitState(room.receivers.get(0).states(), KVPoll.TRANSFERRING);

				// The link of the second pair dies: nothing passes, nothing is reset; the first pair stays up.
				long cutAt = System.nanoTime();
				List<Channel> dead = second.blackhole();
				assertThat(dead).hasSize(2 * STRIPES / 2);
				room.send(ROOM_PAGES / 2, ROOM_PAGES);
				StepVerifier.create(room.receivers.get(0).completion())
						.expectErrorSatisfies(e -> {
							assertThat(e).isInstanceOf(KVTransferException.class);
							assertThat(((KVTransferException) e).failureCause()).isEqualTo(FailureCause.CONNECTION_LOST);
							// Whichever side's heartbeat finds the silence first closes the session, so decode
							// hears it either from its own silent stripe or as the rank closing the live ones.
							assertThat(e.getMessage()).contains("Lost connection with prefill rank " + first.address())
									.containsAnyOf("no heartbeat", "closed by peer");
						})
						.verify(DETECTION_BOUND.multipliedBy(4));
				Duration took = Duration.ofNanos(System.nanoTime() - cutAt);
				System.out.printf(Locale.ROOT, "second interface silent: the room failed after %d ms (heartbeat %d ms)%n",
						took.toMillis(), HEARTBEAT.toMillis());
				assertThat(took).as("decode's detection").isLessThan(DETECTION_BOUND);
				// Prefill may have written its last bytes into the dead pair before it noticed: its sender then ends as
				// sent, else as lost; either way it ends.
				StepVerifier.create(room.senders.get(0).completion().onErrorComplete()).expectComplete().verify(T);
				assertThat(decode.status(room.id)).as("decode forgot the room").isNull();

				// The pair is back (new flows pass): the next room opens a new session over both interfaces.
				LiveRoom next = open(rig, 2, 1);
				next.sendAll();
				StepVerifier.create(next.completion()).expectComplete().verify(T);
				assertThat(next.verify()).isNull();
				assertThat(first.accepted()).isEqualTo(STRIPES);
				assertThat(second.accepted()).isEqualTo(STRIPES);
			}
		}
	}

	@Test
	void aSecondInterfaceRefusingConnectionsFailsTheRoomInsteadOfLeavingItWaiting() {
		try (FaultRig rig = rig()) {
			PrefillKVManager rank = rig.cluster.prefillManagers().get(0).get(0);
			try (TcpProxy first = TcpProxy.start(rank.endpoint()); TcpProxy second = TcpProxy.start(rank.endpoint())) {
				register(rig, rank, first.address(), second.address());
				second.refuse(true);
				LiveRoom room = open(rig, 1, 0);
				room.sendAll();
				StepVerifier.create(room.receivers.get(0).completion())
						.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVTransferException.class)
								.hasMessageContaining("Could not bootstrap room 1"))
						.verify(T);
				assertThat(second.accepted()).as("decode dialled the second interface").isPositive();
			}
		}
	}

	private static void awaitState(Flux<KVPoll> states, KVPoll state) {
		StepVerifier.create(states)
				.thenConsumeWhile(s -> s != state && !s.isTerminal())
				.expectNext(state)
				.thenCancel()
				.verify(T);
	}
}
