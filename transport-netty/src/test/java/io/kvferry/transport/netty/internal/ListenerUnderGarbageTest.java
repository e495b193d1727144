package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.test.Sent;
import io.kvferry.HostPort;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A real listener sprayed with garbage over raw loopback sockets while a well-behaved connection on the same listener
 * keeps working: every garbage socket gets closed (at once when its bytes are malformed; by the handshake timeout or
 * the dead-peer timeout when they happen to be a valid prefix and then go quiet), and the good connection carries
 * messages and data byte-exact before, during and after the spray.
 */
class ListenerUnderGarbageTest {

	private static final Duration TIMEOUT = Duration.ofSeconds(10);
	// Long enough that a loaded 2-core machine never looks like a dead peer, short enough to close quiet garbage soon.
	private static final Duration HEARTBEAT = Duration.ofSeconds(1);
	private static final int SPRAYERS = 48;
	private static final int MIB = 1 << 20;

	@Test
	void garbageSocketsAreClosedWhileAWellBehavedConnectionKeepsWorking() throws Exception {
		NettyKVTransport listening = NettyKVTransport.create().heartbeatInterval(HEARTBEAT);
		NettyKVTransport connecting = NettyKVTransport.create().heartbeatInterval(HEARTBEAT).eventLoopThreads(1);
		RecordingHandler serverSide = new RecordingHandler();
		RecordingHandler clientSide = new RecordingHandler();
		CompletableFuture<KVConnection> good = new CompletableFuture<>();
		AtomicInteger acceptedGarbage = new AtomicInteger();
		try {
			KVTransport.Listener listener = listening.listen(new HostPort("127.0.0.1", 0), c -> {
				if (good.complete(c)) {
					return serverSide;
				}
				// A garbage stream that happens to start with a valid handshake gets a handler too.
				acceptedGarbage.incrementAndGet();
				return new RecordingHandler();
			}).block(TIMEOUT);
			KVConnection client = connecting.connect(listener.address(), clientSide).block(TIMEOUT);
			KVConnection server = good.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
			MemoryRegion src = Samples.randomRegion(4 * MIB, 61);
			MemoryRegion dst = MemoryRegion.allocate(4 * MIB, 1);
			exchange(client, server, clientSide, serverSide, src, dst, 0);

			FuzzCorpus corpus = new FuzzCorpus(TransportSettings.DEFAULT.maxFrameLength());
			SplittableRandom random = new SplittableRandom(0x5eed);
			List<Socket> sockets = new ArrayList<>();
			try {
				for (int i = 0; i < SPRAYERS; i++) {
					Socket socket = new Socket("127.0.0.1", listener.address().port());
					socket.setSoTimeout((int) TIMEOUT.toMillis());
					sockets.add(socket);
					spray(socket, garbage(i, corpus, random));
					if (i == SPRAYERS / 2) {
						exchange(client, server, clientSide, serverSide, src, dst, 1);
					}
				}
				int closed = 0;
				for (Socket socket : sockets) {
					assertThat(readUntilClosed(socket.getInputStream())).as("socket closed by the listener").isTrue();
					closed++;
				}
				assertThat(closed).isEqualTo(SPRAYERS);
			}
			finally {
				for (Socket socket : sockets) {
					socket.close();
				}
			}
			exchange(client, server, clientSide, serverSide, src, dst, 2);
			assertThat(client.isActive()).isTrue();
			assertThat(server.isActive()).isTrue();
			assertThat(serverSide.closeReasons).isEmpty();
			assertThat(clientSide.closeReasons).isEmpty();
			System.out.printf("kvferry garbage spray: %d raw sockets closed, %d of them had passed the handshake%n",
					SPRAYERS, acceptedGarbage.get());
		}
		finally {
			connecting.disposeNow(TIMEOUT);
			listening.disposeNow(TIMEOUT);
		}
	}

	/** Kinds in turn: random bytes, an HTTP request, mutated kvferry streams, a handshake then a stalled big frame. */
	private static byte[] garbage(int i, FuzzCorpus corpus, SplittableRandom random) {
		switch (i % 4) {
			case 0: {
				byte[] b = new byte[1 + random.nextInt(8192)];
				for (int k = 0; k < b.length; k++) {
					b[k] = (byte) random.nextInt(256);
				}
				return b;
			}
			case 1:
				return "GET /metrics HTTP/1.1\r\nHost: prefill\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
			case 2:
				return corpus.nextForConnection(random).bytes();
			default: {
				// A valid handshake, then the prefix of a 16 MiB REJECT and 100 of its bytes: the listener buffers only
				// what arrives and closes the quiet peer after two heartbeat intervals.
				ByteBuf preface = KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT,
						KVMessage.PROTOCOL_VERSION);
				ByteBuf auth = KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT,
						new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 16 << 20));
				int at = preface.readableBytes() + auth.readableBytes();
				byte[] stalled = new byte[at + 5 + 100];
				preface.readBytes(stalled, 0, preface.readableBytes());
				auth.readBytes(stalled, KVFrameCodec.PREFACE_LENGTH, auth.readableBytes());
				preface.release();
				auth.release();
				int length = 16 << 20;
				stalled[at] = (byte) (length >>> 24);
				stalled[at + 1] = (byte) (length >>> 16);
				stalled[at + 2] = (byte) (length >>> 8);
				stalled[at + 3] = (byte) length;
				stalled[at + 4] = KVFrameCodec.TYPE_REJECT;
				return stalled;
			}
		}
	}

	private static void spray(Socket socket, byte[] bytes) {
		try {
			socket.getOutputStream().write(bytes);
			socket.getOutputStream().flush();
		}
		catch (IOException e) {
			// The listener already closed on an early malformed byte: exactly what is wanted.
		}
	}

	/** @return true once the peer closed (EOF or reset); false if it kept the socket open for {@link #TIMEOUT} */
	private static boolean readUntilClosed(InputStream in) throws IOException {
		byte[] sink = new byte[4096];
		try {
			while (in.read(sink) >= 0) {
				// The listener's preface, AUTH and heartbeats.
			}
			return true;
		}
		catch (SocketTimeoutException e) {
			return false;
		}
		catch (SocketException e) {
			return true;
		}
	}

	/** Round trip of messages both ways and a 4 MiB data block, byte-exact. */
	private static void exchange(KVConnection client, KVConnection server, RecordingHandler clientSide,
			RecordingHandler serverSide, MemoryRegion src, MemoryRegion dst, long round) throws Exception {
		KVMessage.Abort abort = new KVMessage.Abort(round, "round " + round);
		StepVerifier.create(Sent.now(client, abort)).expectComplete().verify(TIMEOUT);
		assertThat(serverSide.nextMessage(TIMEOUT)).isEqualTo(abort);

		PlatformDependent.setMemory(dst.address(), 4L * MIB, (byte) 0);
		AtomicLong received = new AtomicLong();
		CompletableFuture<Void> done = new CompletableFuture<>();
		clientSide.sinks = h -> new RegionSink(dst, h, received, () -> {
			if (received.get() == 4L * MIB) {
				done.complete(null);
			}
		});
		server.send(new DataBlock(new DataHeader(round, RegionKind.KV, 0, 0, 4 * MIB, 4 * MIB, 1), src.address(),
				4 * MIB));
		KVMessage.AbortAck ack = new KVMessage.AbortAck(round);
		StepVerifier.create(Sent.now(server, ack)).expectComplete().verify(TIMEOUT);
		done.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		assertThat(clientSide.nextMessage(TIMEOUT)).isEqualTo(ack);
		assertThat(Samples.read(dst, 0, 4 * MIB)).isEqualTo(Samples.read(src, 0, 4 * MIB));
	}
}
