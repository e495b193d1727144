package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVStatusEvent;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillSpec;
import io.kvferry.RoomPath;
import io.kvferry.RoomPhases;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import io.kvferry.transport.netty.TestTls;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A room says how it travelled (TCP with its stripes, the same-host ring, TLS) on both sides, and a rank of either side
 * that requires a path fails rooms that would take another, naming both, instead of falling back.
 */
class RoomPathIT {

	private static final Duration T = Duration.ofSeconds(60);
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(2);
	// A phase's mark and the state change it goes with are stamped a few lines apart; a busy machine may preempt
	// the thread in between.
	private static final long SLACK_NANOS = Duration.ofMillis(25).toNanos();
	private static final Duration COMPUTE = Duration.ofMillis(100);

	@Test
	void aTcpRoomSaysTcpWithItsStripes() {
		RoomPath path = roomPath(NettyKVTransport.create(), UnaryOperator.identity());
		assertThat(path).isEqualTo(new RoomPath(RoomPath.Kind.TCP, DecodeSpec.DEFAULT_STRIPES, false));
		assertThat(path.toString()).isEqualTo("TCP with " + DecodeSpec.DEFAULT_STRIPES + " stripes");
		assertThat(path.tag()).isEqualTo("tcp");
	}

	@Test
	void aSameHostRoomSaysSharedMemoryAndMeetsTheRequirementOfBothSides() {
		RoomPath path = roomPath(NettyKVTransport.create().sameHost(SameHost.AUTO),
				spec -> spec.requirePath(RoomPath.Requirement.SHARED_MEMORY));
		assertThat(path.kind()).isEqualTo(RoomPath.Kind.SHARED_MEMORY);
		assertThat(path.tls()).isFalse();
	}

	@Test
	void aTlsRoomSaysTlsAndMeetsTheRequirementOfBothSides() {
		RoomPath path = roomPath(NettyKVTransport.create().secure(TestTls.server(), TestTls.client()),
				spec -> spec.requirePath(RoomPath.Requirement.TLS));
		assertThat(path).isEqualTo(new RoomPath(RoomPath.Kind.TCP, DecodeSpec.DEFAULT_STRIPES, true));
		assertThat(path.tag()).isEqualTo("tcp_tls");
	}

	@Test
	void requiringSharedMemoryFromAPeerThatOnlyDoesTcpFailsTheRoomNamingBothPaths() {
		// Decode offers the ring; the prefill rank's transport keeps TCP.
		NettyKVTransport prefill = NettyKVTransport.create();
		NettyKVTransport decode = NettyKVTransport.create().sameHost(SameHost.AUTO);
		try (Cluster c = Cluster.start(prefill, decode,
				spec -> spec instanceof DecodeSpec d ? d.requirePath(RoomPath.Requirement.SHARED_MEMORY) : spec)) {
			LiveRoom room = c.open(1);
			KVReceiver receiver = room.receivers.get(0);
			StepVerifier.create(receiver.completion())
					.expectErrorSatisfies(e -> {
						assertThat(e).isInstanceOf(KVTransferException.class);
						assertThat(((KVTransferException) e).failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
						assertThat(e.getMessage()).contains("requires shared memory")
								.contains("is TCP with " + DecodeSpec.DEFAULT_STRIPES + " stripes");
					})
					.verify(T);
			StepVerifier.create(room.senders.get(0).completion()).expectError().verify(T);
		}
	}

	@Test
	void requiringTlsOverPlainTcpFailsTheRoom() {
		NettyKVTransport netty = NettyKVTransport.create();
		try (Cluster c = Cluster.start(netty, netty,
				spec -> spec instanceof DecodeSpec d ? d.requirePath(RoomPath.Requirement.TLS) : spec)) {
			LiveRoom room = c.open(1);
			StepVerifier.create(room.receivers.get(0).completion())
					.expectErrorSatisfies(e -> assertThat(e.getMessage()).contains("requires TLS")
							.contains("is TCP with"))
					.verify(T);
		}
	}

	@Test
	void aPrefillRankThatRequiresTlsRefusesADecodeRankOverPlainTcpNamingBothPaths() {
		NettyKVTransport netty = NettyKVTransport.create();
		try (Cluster c = Cluster.start(netty, netty,
				spec -> spec instanceof PrefillSpec p ? p.requirePath(RoomPath.Requirement.TLS) : spec)) {
			LiveRoom room = c.open(1);
			room.sendAll();
			StepVerifier.create(room.senders.get(0).completion())
					.expectErrorSatisfies(e -> {
						KVTransferException k = (KVTransferException) e;
						assertThat(k.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
						assertThat(k.reason()).contains("requires TLS").contains("decode rank")
								.contains("is TCP with " + DecodeSpec.DEFAULT_STRIPES + " stripes");
					})
					.verify(T);
			StepVerifier.create(room.receivers.get(0).completion())
					.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason()).contains("requires TLS"))
					.verify(T);
			assertThat(room.verify()).as("no byte went over the weaker path").isNotNull();
		}
	}

	@Test
	void aTcpRoomsPhasesArePresentInOrderAndAddUpToItsDurationOnBothSides() {
		NettyKVTransport netty = NettyKVTransport.create();
		try (Cluster c = Cluster.start(netty, netty, UnaryOperator.identity())) {
			Mono<List<KVStatusEvent>> decodeEvents = events(c.cluster.decodeManagers().get(0), 1);
			Mono<List<KVStatusEvent>> prefillEvents = events(c.cluster.prefillManagers().get(0).get(0), 1);
			long before = System.nanoTime();
			LiveRoom room = c.open(1);
			KVSender sender = room.senders.get(0);
			KVReceiver receiver = room.receivers.get(0);
			// The engine computes once decode asked: prefill then waits for it, decode for prefill.
			StepVerifier.create(sender.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).take(1))
					.expectNextCount(1).expectComplete().verify(T);
			compute();
			room.send(0, 4);
			// Decode's wire phase starts at its first landed byte, which may come after the chunk was handed: the
			// second compute must start after it to be part of decode's wire time.
			StepVerifier.create(receiver.states().filter(s -> s == KVPoll.TRANSFERRING).take(1))
					.expectNextCount(1).expectComplete().verify(T);
			compute();
			room.send(4, 8);
			StepVerifier.create(room.completion()).expectComplete().verify(T);
			long elapsed = System.nanoTime() - before;
			assertThat(room.verify()).isNull();

			RoomPhases d = receiver.phases();
			List<KVStatusEvent> de = decodeEvents.block(T);
			assertThat(de.get(de.size() - 1).phases()).as("the terminal event carries them").isEqualTo(d);
			// Each boundary is where decode's state changed: connected, first byte landed, verified.
			assertInOrder(d, de, List.of(RoomPhases.Phase.BOOTSTRAP, RoomPhases.Phase.WAITING_FOR_PEER,
					RoomPhases.Phase.WIRE, RoomPhases.Phase.LANDING), List.of(KVPoll.WAITING_FOR_INPUT,
							KVPoll.TRANSFERRING));
			assertThat(d.waitingForEngine()).isEmpty();
			assertThat(d.waitingForPeer().orElseThrow()).as("prefill's compute").isGreaterThanOrEqualTo(COMPUTE);
			assertThat(d.wire().orElseThrow()).as("the second chunk's compute").isGreaterThanOrEqualTo(COMPUTE);
			assertThat(d.total().toNanos()).isLessThanOrEqualTo(elapsed);

			RoomPhases p = sender.phases();
			List<KVStatusEvent> pe = prefillEvents.block(T);
			assertThat(pe.get(pe.size() - 1).phases()).isEqualTo(p);
			// Prefill: every request arrived, then the engine's first chunk went.
			assertInOrder(p, pe, List.of(RoomPhases.Phase.WAITING_FOR_PEER, RoomPhases.Phase.WAITING_FOR_ENGINE,
					RoomPhases.Phase.WIRE), List.of(KVPoll.WAITING_FOR_INPUT, KVPoll.TRANSFERRING));
			assertThat(p.waitingForEngine().orElseThrow()).isGreaterThanOrEqualTo(COMPUTE);
			assertThat(p.wire().orElseThrow()).isGreaterThanOrEqualTo(COMPUTE);
			assertThat(p.bootstrap()).isEmpty();
			assertThat(p.landing()).isEmpty();
			assertThat(p.total().toNanos()).isLessThanOrEqualTo(elapsed);
		}
	}

	/**
	 * Checks that {@code phases} holds exactly {@code present}, that they add up to the room's duration (first event
	 * to terminal event), and that the boundaries between the first ones fall where the room entered each of
	 * {@code states}.
	 */
	private static void assertInOrder(RoomPhases phases, List<KVStatusEvent> events, List<RoomPhases.Phase> present,
			List<KVPoll> states) {
		for (RoomPhases.Phase phase : RoomPhases.Phase.values()) {
			assertThat(phases.has(phase)).as("%s in %s", phase, phases).isEqualTo(present.contains(phase));
		}
		KVStatusEvent last = events.get(events.size() - 1);
		assertThat(last.current()).isEqualTo(KVPoll.SUCCESS);
		long opened = last.timestampNanos() - phases.total().toNanos();
		assertThat(events.get(0).timestampNanos() - opened).as("the room's duration, to a state change's stamping")
				.isBetween(0L, SLACK_NANOS);
		long boundary = opened;
		for (int i = 0; i < states.size(); i++) {
			boundary += phases.nanos(present.get(i));
			KVPoll state = states.get(i);
			long entered = events.stream().filter(e -> e.current() == state).findFirst().orElseThrow()
					.timestampNanos();
			assertThat(entered - boundary).as("end of %s, against entering %s", present.get(i), state)
					.isBetween(-SLACK_NANOS, SLACK_NANOS);
		}
	}

	/**
	 * The engine computing a chunk: a time the phases must show, on the test's thread as an engine's would be. Not a
	 * wait for anything: without it loopback moves the room faster than the phases' boundaries can be told apart.
	 */
	private static void compute() {
		StepVerifier.create(Mono.delay(COMPUTE)).expectNextCount(1).expectComplete().verify(T);
	}

	/** @return the room's events until its terminal one, subscribed now (the stream is hot) */
	private static Mono<List<KVStatusEvent>> events(KVManager manager, long room) {
		Mono<List<KVStatusEvent>> events = manager.events().filter(e -> e.room() == room)
				.takeUntil(e -> e.current().isTerminal()).collectList().cache();
		events.subscribe();
		return events;
	}

	/** @return the path of one room that succeeded byte-exact over {@code netty}, the same on both sides */
	private static RoomPath roomPath(NettyKVTransport netty, UnaryOperator<KVManagerSpec<?, ?>> customize) {
		try (Cluster c = Cluster.start(netty, netty, customize)) {
			LiveRoom room = c.open(1);
			room.sendAll();
			StepVerifier.create(room.completion()).expectComplete().verify(T);
			assertThat(room.verify()).isNull();
			RoomPath path = room.receivers.get(0).path();
			assertThat(room.senders.get(0).path()).as("prefill's end of the same connections").isEqualTo(path);
			return path;
		}
	}

	/** One prefill rank and one decode rank on loopback, each on its own transport, with a bootstrap server. */
	private record Cluster(DisposableBootstrapServer server, ReactorBootstrapClient client, KVCluster cluster,
			List<NettyKVTransport> transports) implements AutoCloseable {

		static Cluster start(NettyKVTransport prefill, NettyKVTransport decode,
				UnaryOperator<KVManagerSpec<?, ?>> customize) {
			DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
			ReactorBootstrapClient client = ReactorBootstrapClient.create();
			KVCluster cluster = KVCluster.builder().shape(SHAPE).prefill(1, 1, 1).decode(1, 1).capacity(32, 4)
					.transport(prefill).decodeTransport(decode).bootstrapClient(client)
					.bootstrapAddress(server.address()).customize(customize).startNow(T);
			return new Cluster(server, client, cluster, prefill == decode ? List.of(prefill) : List.of(prefill, decode));
		}

		LiveRoom open(long id) {
			int[] pages = range(0, 8);
			return LiveRoom.open(cluster.bootstrapAddress(), id, cluster.prefillManagers().get(0),
					cluster.prefillMemory().get(0), cluster.decodeManagers(), cluster.decodeMemory(), pages, pages, 0,
					0);
		}

		@Override
		public void close() {
			cluster.close().block(T);
			transports.forEach(t -> t.disposeNow(T));
			client.dispose();
			server.disposeNow();
		}
	}
}
