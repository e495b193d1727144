package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.HostPort;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.Child;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.kvferry.transport.netty.internal.shm.Ring;
import io.kvferry.transport.netty.internal.shm.RingFiles;
import io.kvferry.transport.netty.internal.shm.SameHostLink;
import io.kvferry.transport.netty.internal.shm.ShmConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The name of a same-host ring file never outlives the offer: gone when decode falls back to TCP, gone as soon as
 * prefill mapped the file even when decode is killed before it hears the answer, and, left by a decode killed while
 * its offer was pending, removed by the next ring created in that directory (while the ring of a live decode stays).
 * Killed decodes are real JVMs killed with {@code SIGKILL}.
 */
class SameHostCleanupTest {

	private static final int SLOT = 64 * 1024;
	private static final int SLOTS = 4;

	@TempDir
	Path dir;

	private NettyKVTransport sameHost() {
		return NettyKVTransport.create().sameHost(SameHost.AUTO).sameHostRing(SLOTS, SLOT).sameHostDirectory(dir);
	}

	private ShmConfig config() {
		return ShmConfig.of(SameHost.AUTO).withDirectory(dir).withRing(SLOTS, SLOT);
	}

	@Test
	void anOfferNobodyAnswersLosesItsNameBeforeDecodeFallsBackToTcp() throws Exception {
		NettyKVTransport decode = sameHost().sameHostOfferTimeout(Duration.ofMillis(200)).eventLoopThreads(1);
		try (LogRecorder logs = LogRecorder.of(SameHostLink.class);
				ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			CompletableFuture<KVConnection> connected = decode.connect(new HostPort("127.0.0.1",
					server.getLocalPort()), new RecordingHandler()).toFuture();
			try (Socket socket = server.accept()) {
				Path offered = offeredPath(RawRing.offerOf(socket));
				NettyKVConnection connection = (NettyKVConnection) connected.get(TIMEOUT.toMillis(),
						TimeUnit.MILLISECONDS);
				assertThat(connection.sameHostActive()).isFalse();
				assertThat(logs.await(l -> l.contains("KV data goes over TCP"), TIMEOUT))
						.contains("no SHM_REPLY within 200 ms");
				assertThat(offered.getParent()).isEqualTo(dir);
				assertThat(RingDir.files(dir)).as("ring files once connect completed over TCP").isEmpty();
				assertThat(RingDir.mapped(dir)).as("mapped still, for an answer that comes late").hasSize(1);
			}
		}
		finally {
			decode.disposeNow(TIMEOUT);
		}
		RingDir.awaitUnmapped(dir);
	}

	@Test
	void anAcceptanceThatComesAfterTheFallbackStillPutsTheRingToUse() throws Exception {
		// Long enough for the fake prefill to map the file while it still has its name.
		NettyKVTransport decode = sameHost().sameHostOfferTimeout(Duration.ofSeconds(1)).eventLoopThreads(1);
		RecordingHandler handler = new RecordingHandler();
		MemoryRegion dst = MemoryRegion.allocate(SLOT, 1);
		AtomicLong received = new AtomicLong();
		CompletableFuture<Long> landed = new CompletableFuture<>();
		handler.sinks = h -> new RegionSink(dst, h, received, () -> landed.complete(received.get()));
		try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			CompletableFuture<KVConnection> connected = decode.connect(new HostPort("127.0.0.1",
					server.getLocalPort()), handler).toFuture();
			try (Socket socket = server.accept(); RawRing ring = RawRing.mapOffered(socket, dir)) {
				NettyKVConnection connection = (NettyKVConnection) connected.get(TIMEOUT.toMillis(),
						TimeUnit.MILLISECONDS);
				assertThat(connection.sameHostActive()).as("fell back: no answer within 1 s").isFalse();
				assertThat(RingDir.files(dir)).isEmpty();

				ring.reply(true);
				ring.fill(1, (byte) 0x3C);
				ring.dataShm(new DataHeader(1, RegionKind.KV, 0, 0, SLOT, SLOT, 1), 1);
				assertThat(landed.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isEqualTo(SLOT);
				assertThat(Samples.read(dst, 0, SLOT)).containsOnly(0x3C);
				assertThat(connection.sameHostActive()).isTrue();
			}
		}
		finally {
			decode.disposeNow(TIMEOUT);
		}
		RingDir.awaitUnmapped(dir);
	}

	@Test
	void prefillUnlinksTheRingOnceItMappedItSoADecodeKilledBeforeTheAnswerLeavesNothing() throws Exception {
		NettyKVTransport prefill = sameHost().eventLoopThreads(1);
		RecordingHandler prefillHandler = new RecordingHandler();
		CompletableFuture<KVConnection> accepted = new CompletableFuture<>();
		KVTransport.Listener listener = prefill.listen(new HostPort("127.0.0.1", 0), c -> {
			accepted.complete(c);
			return prefillHandler;
		}).block(TIMEOUT);
		try (HoldingRelay relay = new HoldingRelay(listener.address().port());
				Child decode = Child.startMain("decode", SameHostDecodeMain.class, dir.toString(),
						String.valueOf(relay.port()))) {
			// Prefill mapped the ring and answered; decode never gets the answer, so it never unlinks the file.
			assertThat(relay.replyHeld).as("prefill's answer (decode's output:\n%s)", decode.output())
					.succeedsWithin(TIMEOUT);
			assertThat(RingDir.files(dir)).as("ring files once prefill mapped the ring").isEmpty();
			assertThat(RingDir.mapped(dir)).as("prefill's mapping").hasSize(1);

			decode.kill();
			assertThat(prefillHandler.awaitClose(TIMEOUT)).isNotNull();
			RingDir.awaitUnmapped(dir);
			assertThat(RingDir.files(dir)).isEmpty();
		}
		finally {
			prefill.disposeNow(TIMEOUT);
		}
	}

	@Test
	void aRingLeftByADecodeKilledDuringItsOfferIsRemovedByTheNextRingCreatedThere() throws Exception {
		try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
				Child decode = Child.startMain("decode", SameHostDecodeMain.class, dir.toString(),
						String.valueOf(server.getLocalPort()))) {
			try (Socket socket = accept(server, decode)) {
				socket.setSoTimeout((int) TIMEOUT.toMillis());
				// A prefill that never answers: the offered file keeps its name while decode waits.
				Path offered = offeredPath(RawRing.offerOf(socket));
				assertThat(RingDir.files(dir)).containsExactly(offered);

				Ring mine = Ring.create(config());
				assertThat(RingDir.files(dir)).as("the ring a live decode offers stays")
						.containsExactlyInAnyOrder(offered, mine.path());
				release(mine);

				decode.kill();
				assertThat(RingDir.files(dir)).as("no shutdown hook ran").containsExactly(offered);
				Ring next = Ring.create(config());
				assertThat(RingDir.files(dir)).as("the killed decode's ring removed").containsExactly(next.path());
				release(next);
			}
		}
	}

	@Test
	void theSweepRemovesOnlyFinishedRingsThatNoProcessLocks() throws Exception {
		byte[] header = new byte[Ring.HEADER_BYTES];
		System.arraycopy("KVFRSHM1".getBytes(StandardCharsets.US_ASCII), 0, header, 0, 8);
		Path finished = Files.write(dir.resolve("kvferry-" + "0".repeat(32)), header);
		// Created a moment ago and not yet locked, or never finished: the magic is written last.
		Path unfinished = Files.write(dir.resolve("kvferry-" + "1".repeat(32)), new byte[Ring.HEADER_BYTES]);
		Path notARing = Files.write(dir.resolve("kvferry-notes"), header);

		Ring ring = Ring.create(config());
		assertThat(RingDir.files(dir)).doesNotContain(finished)
				.containsExactlyInAnyOrder(unfinished, notARing, ring.path());
		release(ring);
	}

	private static void release(Ring ring) {
		ring.unmap();
		RingFiles.unlink(ring.path());
	}

	private static Socket accept(ServerSocket server, Child client) throws IOException {
		server.setSoTimeout((int) TIMEOUT.toMillis());
		try {
			return server.accept();
		}
		catch (SocketTimeoutException e) {
			throw new AssertionError("no connection within " + TIMEOUT + "; the child said:\n" + client.output(), e);
		}
	}

	private static Path offeredPath(byte[] offer) throws IOException {
		DataInputStream body = new DataInputStream(new ByteArrayInputStream(offer));
		body.readFully(new byte[body.readInt()]);
		byte[] path = new byte[body.readInt()];
		body.readFully(path);
		return Path.of(new String(path, StandardCharsets.UTF_8));
	}

	/**
	 * A relay between one decode and a prefill listener that passes everything, except that it keeps prefill's
	 * {@code SHM_REPLY} and whatever follows it from decode: decode waits for an answer prefill already gave.
	 */
	private static final class HoldingRelay implements AutoCloseable {

		final CompletableFuture<Void> replyHeld = new CompletableFuture<>();
		private final ServerSocket server;
		private final int target;
		private volatile Socket client;
		private volatile Socket prefill;

		HoldingRelay(int target) throws IOException {
			this.target = target;
			this.server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
			Thread t = new Thread(this::run, "holding-relay");
			t.setDaemon(true);
			t.start();
		}

		int port() {
			return server.getLocalPort();
		}

		private void run() {
			try {
				client = server.accept();
				prefill = new Socket(InetAddress.getLoopbackAddress(), target);
				Thread up = new Thread(() -> copy(client, prefill), "holding-relay-up");
				up.setDaemon(true);
				up.start();
				DataInputStream in = new DataInputStream(prefill.getInputStream());
				DataOutputStream out = new DataOutputStream(client.getOutputStream());
				byte[] preface = new byte[KVFrameCodec.PREFACE_LENGTH];
				in.readFully(preface);
				out.write(preface);
				for (;;) {
					int length = in.readInt();
					int type = in.readUnsignedByte();
					byte[] body = new byte[length - 1];
					in.readFully(body);
					if (type == KVFrameCodec.TYPE_SHM_REPLY) {
						replyHeld.complete(null);
						in.transferTo(OutputStream.nullOutputStream());
						return;
					}
					out.writeInt(length);
					out.writeByte(type);
					out.write(body);
					out.flush();
				}
			}
			catch (IOException e) {
				replyHeld.completeExceptionally(e);
			}
			finally {
				closeAll();
			}
		}

		private void copy(Socket from, Socket to) {
			try (InputStream in = from.getInputStream()) {
				in.transferTo(to.getOutputStream());
			}
			catch (IOException e) {
				// The child was killed: its socket reset.
			}
			finally {
				closeAll();
			}
		}

		private void closeAll() {
			for (AutoCloseable c : List.of(server, client == null ? server : client,
					prefill == null ? server : prefill)) {
				try {
					c.close();
				}
				catch (Exception e) {
					// Closing a closed socket: nothing to do.
				}
			}
		}

		@Override
		public void close() {
			closeAll();
		}
	}
}
