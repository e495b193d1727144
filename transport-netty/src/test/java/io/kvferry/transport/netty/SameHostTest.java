package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.kvferry.HostPort;
import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendGate;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.kvferry.test.Sent;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import io.kvferry.transport.netty.internal.shm.SameHostLink;
import io.kvferry.spi.KVMessage.Status;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The same-host path over real sockets between two transports: payloads through a shared ring in a real mapped file,
 * byte-exact; refusal of forged slots; fencing; fallback to TCP; the ring file gone once both sides mapped it and the
 * memory released when the connection ends.
 */
class SameHostTest {

	private static final int SLOT = 64 * 1024;
	private static final int SLOTS = 4;

	@TempDir
	Path dir;

	private NettyKVTransport sameHost() {
		return NettyKVTransport.create().sameHost(SameHost.AUTO).sameHostRing(SLOTS, SLOT).sameHostDirectory(dir);
	}

	private List<Path> ringFiles() throws IOException {
		return RingDir.files(dir);
	}

	@Test
	void blocksCrossTheRingByteExactInOrderWithMessagesAndTheFileIsGoneOnceMapped() throws Exception {
		try (Loopback link = Loopback.open(sameHost())) {
			assertThat(link.connected.sameHostActive()).as("decode reads from the ring").isTrue();
			assertThat(link.accepted.sameHostActive()).as("prefill writes to the ring").isTrue();
			assertThat(link.connecting.sameHostConnections()).isEqualTo(1);
			awaitNoRingFiles();

			// 3 MiB through 4 slots of 64 KiB: the ring wraps 12 times, each slot coming back by credit.
			int length = 3 << 20;
			MemoryRegion src = Samples.randomRegion(length, 3);
			MemoryRegion dst = MemoryRegion.allocate(length, 1);
			MemoryRegion stridedDst = MemoryRegion.allocate(256 * 1024, 1);
			AtomicLong received = new AtomicLong();
			AtomicLong stridedReceived = new AtomicLong();
			AtomicInteger completed = new AtomicInteger();
			link.connectedHandler.sinks = h -> h.room() == 2 ? new RegionSink(stridedDst, h, stridedReceived, () -> {
			}) : new RegionSink(dst, h, received, completed::incrementAndGet);

			link.accepted.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, length, length, 1),
					src.address(), length));
			link.accepted.send(new Status(1, KVPoll.SUCCESS, 0, "", length, -1));
			// Strided on both sides: 512 chunks of 200 bytes read every 300, written every 500 (several per slot).
			DataHeader strided = new DataHeader(2, RegionKind.KV, 0, 0, 200, 500, 512);
			link.accepted.send(new DataBlock(strided, src.address(), 300));
			link.accepted.send(new KVMessage.AbortAck(2));

			assertThat(link.connectedHandler.nextMessages(2, TIMEOUT)).containsExactly(
					new Status(1, KVPoll.SUCCESS, 0, "", length, -1), new KVMessage.AbortAck(2));
			assertThat(received).hasValue(length);
			assertThat(completed).as("one frame per slot").hasValue(length / SLOT);
			assertThat(Samples.read(dst, 0, length)).isEqualTo(Samples.read(src, 0, length));
			assertThat(stridedReceived).hasValue(512 * 200);
			for (int i = 0; i < 512; i++) {
				assertThat(Samples.read(stridedDst, i * 500L, 200)).as("chunk %d", i)
						.isEqualTo(Samples.read(src, i * 300L, 200));
			}
			assertThat(link.connected.pendingOutboundBytes()).isZero();
		}
	}

	@Test
	void aGateThatClosesBetweenSlotsStopsTheBlockThereAndDropsItsGatedSuccess() throws Exception {
		try (Loopback link = Loopback.open(sameHost())) {
			assertThat(link.accepted.sameHostActive()).isTrue();
			int length = 1 << 20;
			MemoryRegion src = Samples.randomRegion(length, 5);
			MemoryRegion dst = MemoryRegion.allocate(length, 1);
			AtomicLong received = new AtomicLong();
			link.connectedHandler.sinks = h -> new RegionSink(dst, h, received, () -> {
			});
			// The room is aborted after its third slot was written: asked before each frame, the gate says so.
			AtomicInteger asked = new AtomicInteger();
			SendGate gate = () -> asked.incrementAndGet() <= 3;
			link.accepted.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, length, length, 1),
					src.address(), length, gate));
			Mono<Void> success = Sent.now(link.accepted, new Status(1, KVPoll.SUCCESS, 0, "", length, -1), gate);
			link.accepted.send(new KVMessage.AbortAck(1));

			assertThat(link.connectedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
			StepVerifier.create(success).expectErrorMessage("the room of " + new Status(1, KVPoll.SUCCESS, 0, "",
					length, -1) + " stopped before it was written").verify(TIMEOUT);
			assertThat(received).as("the three slots written before the abort, nothing after").hasValue(3L * SLOT);
			assertThat(Samples.read(dst, 3L * SLOT, length - 3 * SLOT)).containsOnly(0);
			assertThat(link.accepted.blocksDropped()).isEqualTo(1);
		}
	}

	@Test
	void anotherHostIdentityKeepsTcpAndSaysWhyOnce() throws Exception {
		try (LogRecorder logs = LogRecorder.of(SameHostLink.class);
				Loopback link = Loopback.open(sameHost(), sameHost().sameHostIdentity("another-host"))) {
			assertThat(link.connected.sameHostActive() || link.accepted.sameHostActive()).isFalse();
			assertThat(logs.await(l -> l.contains("KV data goes over TCP"), TIMEOUT)).contains("another host");
			assertThat(link.connecting.sameHostConnections()).isZero();
			int length = 1 << 20;
			MemoryRegion src = Samples.randomRegion(length, 9);
			MemoryRegion dst = MemoryRegion.allocate(length, 1);
			AtomicLong received = new AtomicLong();
			link.connectedHandler.sinks = h -> new RegionSink(dst, h, received, () -> {
			});
			link.accepted.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, length, length, 1),
					src.address(), length));
			link.accepted.send(new KVMessage.AbortAck(1));
			assertThat(link.connectedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
			assertThat(Samples.read(dst, 0, length)).as("over TCP").isEqualTo(Samples.read(src, 0, length));
			awaitNoRingFiles();
		}
	}


	@ParameterizedTest(name = "slot {0}, chunkLen {1}")
	@CsvSource({ "4, 1024, 'malformed DATA_SHM frame: slot : 4 (expected: 0..3)'",
			"-1, 1024, 'malformed DATA_SHM frame: slot : -1 (expected: 0..3)'",
			"0, 65537, 'malformed DATA_SHM frame: payload of 65537 bytes (chunkLen 65537 x count 1) exceeds the ring''s "
					+ "slot size 65536'",
			"3, 65537, 'malformed DATA_SHM frame: payload of 65537 bytes (chunkLen 65537 x count 1) exceeds the ring''s "
					+ "slot size 65536'" })
	void aForgedSlotOrLengthIsRefusedAndNothingIsWritten(int slot, int chunkLen, String reason) throws Exception {
		NettyKVTransport decode = sameHost().eventLoopThreads(1);
		RecordingHandler handler = new RecordingHandler();
		MemoryRegion dst = MemoryRegion.allocate(4 * SLOT, 1);
		AtomicInteger sinksAsked = new AtomicInteger();
		AtomicLong received = new AtomicLong();
		handler.sinks = h -> {
			sinksAsked.incrementAndGet();
			return new RegionSink(dst, h, received, () -> {
			});
		};
		try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			CompletableFuture<KVConnection> connected = decode.connect(new HostPort("127.0.0.1", server.getLocalPort()),
					handler).toFuture();
			try (Socket socket = server.accept(); RawRing ring = RawRing.accept(socket, dir)) {
				assertThat(connected.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).isActive()).isTrue();
				ring.fill(0, (byte) 0x5A);
				ring.fill(3, (byte) 0x5A);
				ring.dataShm(new DataHeader(1, RegionKind.KV, 0, 0, chunkLen, chunkLen, 1), slot);
				assertThat(handler.awaitClose(TIMEOUT)).isEqualTo(reason);
			}
		}
		finally {
			decode.disposeNow(TIMEOUT);
		}
		assertThat(sinksAsked).as("no sink was asked for").hasValue(0);
		assertThat(received).hasValue(0);
		assertThat(Samples.read(dst, 0, 4 * SLOT)).containsOnly(0);
		awaitUnmapped();
	}

	@Test
	void aPeerThatVanishesBeforeAnsweringFreesTheRing() throws Exception {
		NettyKVTransport decode = sameHost().eventLoopThreads(1);
		try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			Mono<KVConnection> connect = decode.connect(new HostPort("127.0.0.1", server.getLocalPort()),
					new RecordingHandler());
			CompletableFuture<KVConnection> connected = connect.toFuture();
			try (Socket socket = server.accept()) {
				RawRing.offerOf(socket);
				assertThat(ringFiles()).as("the offered ring").hasSize(1);
			}
			StepVerifier.create(Mono.fromFuture(connected)).expectErrorMessage("connection to 127.0.0.1:"
					+ server.getLocalPort() + " closed before the handshake completed: connection closed by peer "
					+ "127.0.0.1:" + server.getLocalPort()).verify(TIMEOUT);
		}
		finally {
			decode.disposeNow(TIMEOUT);
		}
		awaitNoRingFiles();
		awaitUnmapped();
	}

	@Test
	void aConnectionClosedMidBlockReleasesTheRingOnBothSides() throws Exception {
		try (Loopback link = Loopback.open(sameHost())) {
			assertThat(link.accepted.sameHostActive()).isTrue();
			assertThat(mappedRings()).as("mapped by both sides").hasSize(2);
			int length = 8 << 20;
			MemoryRegion src = Samples.randomRegion(length, 13);
			MemoryRegion dst = MemoryRegion.allocate(length, 1);
			AtomicLong received = new AtomicLong();
			AtomicInteger frames = new AtomicInteger();
			link.connectedHandler.sinks = h -> new RegionSink(dst, h, received, () -> {
				if (frames.incrementAndGet() == 2) {
					link.accepted.close("prefill goes away mid-block");
				}
			});
			link.accepted.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, length, length, 1),
					src.address(), length));
			// Closed by peer, or reset or a broken pipe when a credit met the closed socket: decode learns either way.
			assertThat(link.connectedHandler.awaitClose(TIMEOUT)).containsAnyOf("connection closed by peer", "Broken pipe",
					"Connection reset by peer");
			assertThat(received.get()).isLessThan(length);
			// Prefill half-closed: its side ends when it reads decode's close, a moment after decode saw its own.
			long deadline = System.nanoTime() + TIMEOUT.toNanos();
			while ((link.connected.sameHostActive() || link.accepted.sameHostActive()) && System.nanoTime() < deadline) {
				LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
			}
			assertThat(link.connected.sameHostActive() || link.accepted.sameHostActive()).isFalse();
			awaitUnmapped();
		}
	}

	@Test
	void prefillClosingMidBlockStillDeliversWhatItSentBeforeAndDecodeSeesAnOrderlyClose() throws Exception {
		// Credits are always on their way to prefill while the ring streams: a close with credits unread resets the
		// connection, and decode, failing to write its next credit, closed before reading the last frames.
		for (int round = 0; round < 10; round++) {
			try (Loopback link = Loopback.open(sameHost())) {
				assertThat(link.accepted.sameHostActive()).isTrue();
				int length = 8 << 20;
				MemoryRegion src = Samples.randomRegion(length, 17);
				MemoryRegion dst = MemoryRegion.allocate(length, 1);
				AtomicLong received = new AtomicLong();
				AtomicInteger frames = new AtomicInteger();
				KVMessage.Draining notice = new KVMessage.Draining("prefill rank 0 is draining");
				int closeAt = 2 + round % 4;
				link.connectedHandler.sinks = h -> new RegionSink(dst, h, received, () -> {
					if (frames.incrementAndGet() == closeAt) {
						link.accepted.send(notice);
						link.accepted.close("drained");
					}
				});
				link.accepted.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, length, length, 1),
						src.address(), length));
				assertThat(link.connectedHandler.nextMessage(TIMEOUT)).as("round %d", round).isEqualTo(notice);
				assertThat(link.connectedHandler.awaitClose(TIMEOUT)).as("round %d", round)
						.contains("connection closed by peer");
				awaitUnmapped();
			}
		}
	}

	private void awaitNoRingFiles() throws Exception {
		RingDir.awaitNoFiles(dir);
	}

	private List<String> mappedRings() throws IOException {
		return RingDir.mapped(dir);
	}

	private void awaitUnmapped() throws Exception {
		RingDir.awaitUnmapped(dir);
	}
}
