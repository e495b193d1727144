package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

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
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.shm.Ring;
import io.kvferry.transport.netty.internal.shm.SameHostLink;
import io.kvferry.transport.netty.internal.shm.ShmConfig;
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
		try (Stream<Path> files = Files.list(dir)) {
			return files.toList();
		}
	}

	@Test
	void blocksCrossTheRingByteExactInOrderWithMessagesAndTheFileIsGoneOnceMapped() throws Exception {
		try (Loopback link = Loopback.open(sameHost())) {
			assertThat(link.connected.sameHostActive()).as("decode reads from the ring").isTrue();
			assertThat(link.accepted.sameHostActive()).as("prefill writes to the ring").isTrue();
			assertThat(link.listening.sameHostConnections()).isEqualTo(1);
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

			link.accepted.sendData(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, length, length, 1),
					src.address(), length));
			link.accepted.send(new Status(1, KVPoll.SUCCESS, 0, "", length, -1));
			// Strided on both sides: 512 chunks of 200 bytes read every 300, written every 500 (several per slot).
			DataHeader strided = new DataHeader(2, RegionKind.KV, 0, 0, 200, 500, 512);
			link.accepted.sendData(new DataBlock(strided, src.address(), 300));
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
			link.accepted.sendData(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, length, length, 1),
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
			assertThat(link.listening.sameHostConnections()).isZero();
			int length = 1 << 20;
			MemoryRegion src = Samples.randomRegion(length, 9);
			MemoryRegion dst = MemoryRegion.allocate(length, 1);
			AtomicLong received = new AtomicLong();
			link.connectedHandler.sinks = h -> new RegionSink(dst, h, received, () -> {
			});
			link.accepted.sendData(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, length, length, 1),
					src.address(), length));
			link.accepted.send(new KVMessage.AbortAck(1));
			assertThat(link.connectedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
			assertThat(Samples.read(dst, 0, length)).as("over TCP").isEqualTo(Samples.read(src, 0, length));
			awaitNoRingFiles();
		}
	}

	private void awaitNoRingFiles() throws Exception {
		long deadline = System.nanoTime() + TIMEOUT.toNanos();
		while (!ringFiles().isEmpty() && System.nanoTime() < deadline) {
			LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
		}
		assertThat(ringFiles()).as("ring files left in the directory").isEmpty();
	}
}
