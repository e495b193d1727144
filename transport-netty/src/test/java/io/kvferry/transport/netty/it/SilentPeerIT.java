package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.DisaggregationMode;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.DecodeKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.transport.netty.internal.TransportSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A prefill rank that registers, connects and then never says another word (a hung process, a half-dead host): decode
 * notices by the missing heartbeats within two intervals and fails the room, whether the silence starts before the
 * engine's handshake or in the middle of a transfer. The handshake timeout stays at its 10 s default, far above the
 * bound, so only the heartbeat can be what ends these rooms.
 */
class SilentPeerIT {

	private static final Duration HEARTBEAT = Duration.ofMillis(500);
	/** The rule, two heartbeat intervals, plus slack for a busy 2-core machine's timers and the hop to the callback. */
	private static final Duration BOUND = HEARTBEAT.multipliedBy(2).plusMillis(750);
	private static final Duration T = Duration.ofSeconds(30);
	/** How the transport words the dead-peer timeout in its close reason. */
	private static final String TWO_INTERVALS =
			"for 2 intervals (" + TransportSettings.format(HEARTBEAT.multipliedBy(2)) + ")";
	private static final ModelShape SHAPE = new ModelShape(4, 2, 64, 2, 16, false, 0, 64, 0);

	private DisposableBootstrapServer server;
	private ReactorBootstrapClient client;
	private NettyKVTransport transport;
	private DecodeKVManager decode;

	@BeforeEach
	void start() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		client = ReactorBootstrapClient.create();
		transport = NettyKVTransport.create().heartbeatInterval(HEARTBEAT);
		RankMemory memory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 32, 4, 4);
		// The raw peer speaks over one connection.
		decode = KVManagerSpec.decode().kvArgs(memory.kvArgs()).stripes(1)
				.layout(ParallelLayout.SINGLE).transport(transport).bootstrapClient(client).startNow(T);
	}

	@AfterEach
	void stop() {
		decode.disposeNow(T);
		transport.disposeNow(T);
		client.dispose();
		server.disposeNow();
	}

	// When the peer wrote its last bytes.
	private final AtomicLong silentSince = new AtomicLong();

	/** Completes the transport's handshake and never answers the engine's. */
	private final RawPrefillPeer.Script silentAfterPreface = new RawPrefillPeer.Script() {
		@Override
		public void onHello(RawPrefillPeer.Wire wire, KVMessage.Hello hello) {
			silentSince.set(System.nanoTime());
		}
	};

	/** Answers the handshake, writes one page of the room's first destination (decode is Transferring), then nothing. */
	private final RawPrefillPeer.Script silentAfterFirstBlock = new RawPrefillPeer.Script() {
		@Override
		public void onRequest(RawPrefillPeer.Wire wire, KVMessage.TransferRequest req) {
			int itemLen = wire.layout().kv().get(0).itemLen();
			wire.data(new DataHeader(req.room(), RegionKind.KV, 0, (long) req.dstPages()[0] * itemLen, itemLen, itemLen,
					1), (byte) 0).addListener(f -> silentSince.set(System.nanoTime()));
		}
	};

	private RawPrefillPeer registeredPeer(RawPrefillPeer.Script script) {
		RankMemory prefillMemory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 32, 4, 4);
		// It announces the heartbeat interval decode judges its silence by.
		RawPrefillPeer peer = new RawPrefillPeer(PeerLayout.of(prefillMemory.kvArgs(), ParallelLayout.SINGLE), true,
				HEARTBEAT, script);
		StepVerifier.create(client.register(server.address(), PrefillRegistration.prefill(ParallelLayout.SINGLE,
				"127.0.0.1", peer.address().port(), SHAPE.pageSize())))
				.expectComplete()
				.verify(T);
		return peer;
	}

	@Test
	void peerSilentFromTheStartFailsTheHandshakeOnMissingHeartbeatsWithinTwoIntervals() {
		try (RawPrefillPeer peer = registeredPeer(silentAfterPreface)) {
			AtomicLong failedAt = new AtomicLong();
			KVReceiver receiver = decode.receiver(server.address(), 1);
			receiver.sendMetadata(new int[] { 0, 1 }, 0, new int[0]);
			StepVerifier.create(receiver.completion().doOnError(e -> failedAt.set(System.nanoTime())))
					.expectErrorSatisfies(e -> assertThat(e.getMessage())
							.contains("Could not bootstrap room 1")
							.contains("connection to prefill rank " + peer.address() + " closed")
							.contains("no heartbeat from " + peer.address() + " " + TWO_INTERVALS))
					.verify(T);
			assertThat(silentSince.get()).as("the handshake began").isPositive();
			assertThat(Duration.ofNanos(failedAt.get() - silentSince.get())).isLessThan(BOUND);
			assertThat(decode.status(1)).isNull();
		}
	}

	@Test
	void peerSilentMidTransferFailsTheRoomAsALostConnectionWithinTwoIntervals() {
		try (RawPrefillPeer peer = registeredPeer(silentAfterFirstBlock)) {
			AtomicLong failedAt = new AtomicLong();
			KVReceiver receiver = decode.receiver(server.address(), 2);
			receiver.sendMetadata(new int[] { 5, 6, 7 }, 1, new int[0]);
			StepVerifier.create(receiver.states().doOnComplete(() -> failedAt.set(System.nanoTime())))
					.thenConsumeWhile(s -> s != KVPoll.TRANSFERRING && !s.isTerminal())
					.expectNext(KVPoll.TRANSFERRING, KVPoll.FAILED)
					.expectComplete()
					.verify(T);
			StepVerifier.create(receiver.completion())
					.expectErrorSatisfies(e -> assertThat(e.getMessage())
							.contains("Lost connection with prefill rank " + peer.address())
							.contains("no heartbeat from " + peer.address() + " " + TWO_INTERVALS))
					.verify(T);
			assertThat(silentSince.get()).as("the first block went out").isPositive();
			assertThat(Duration.ofNanos(failedAt.get() - silentSince.get())).isLessThan(BOUND);
		}
	}
}
