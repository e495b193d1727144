package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.test.DeafListener;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.kvferry.test.Sent;
import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.MemoryRegion;
import io.kvferry.ProtocolException;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.internal.SharedSecret;
import io.kvferry.transport.netty.internal.TransportSettings;
import io.kvferry.transport.netty.internal.shm.ShmConfig;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.local.LocalIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** {@link NettyKVTransport} over real loopback sockets. */
class NettyKVTransportTest {

	@Test
	void settersReturnNewTransportsAndValidate() {
		NettyKVTransport base = NettyKVTransport.create();
		NettyKVTransport tuned = base.heartbeatInterval(Duration.ofMillis(250)).maxFrameLength(1 << 16)
				.writeBufferWaterMark(1024, 2048).connectTimeout(Duration.ofSeconds(1)).preferNative(false)
				.socketBufferSize(1 << 20).eventLoopThreads(3).sharedSecret("k3y-\u00e9");
		assertThat(base.settings()).isEqualTo(TransportSettings.DEFAULT);
		assertThat(tuned.settings()).isEqualTo(new TransportSettings(Duration.ofMillis(250), 1 << 16, 1024, 2048,
				Duration.ofSeconds(1), false, 1 << 20, 3,
				SharedSecret.of("k3y-\u00e9".getBytes(StandardCharsets.UTF_8)), null, ShmConfig.OFF, List.of()));
		NettyKVTransport named = tuned.advertisedAddresses(new HostPort("prefill.example", 0), new HostPort("::1", 9));
		assertThat(named.settings().advertisedAddresses())
				.containsExactly(new HostPort("prefill.example", 0), new HostPort("::1", 9));
		assertThat(named.advertisedAddresses().settings().advertisedAddresses()).isEmpty();
		assertThat(tuned.settings().advertisedAddresses()).isEmpty();
		assertThatThrownBy(() -> base.advertisedAddresses(new HostPort("a", 1), null))
				.isInstanceOf(NullPointerException.class).hasMessage("addresses[1]");
		assertThat(tuned.settings().sharedSecret()).isNotEqualTo(SharedSecret.of(new byte[] { 'k' }));
		assertThat(tuned.toString()).contains("SharedSecret[redacted]").doesNotContain("k3y");
		assertThat(tuned.settings().handshakeTimeout()).isEqualTo(Duration.ofMillis(1500));
		assertThatThrownBy(() -> base.sharedSecret(new byte[0])).isInstanceOf(IllegalArgumentException.class)
				.hasMessageStartingWith("sharedSecret : 0 bytes (expected: at least 1 byte");
		assertThatThrownBy(() -> base.sharedSecret((String) null)).isInstanceOf(NullPointerException.class)
				.hasMessage("secret");
		assertThatThrownBy(() -> base.maxFrameLength(10)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maxFrameLength : 10 (expected: 1024..1073741824)");
		assertThatThrownBy(() -> base.writeBufferWaterMark(10, 5)).hasMessageContaining("(expected: 0 < low <= high)");
		// The bounds a peer accepts in the handshake, where each side announces its interval.
		Duration[] outside = { Duration.ZERO, Duration.ofMillis(9), Duration.ofMinutes(10).plusMillis(1) };
		for (Duration out : outside) {
			assertThatThrownBy(() -> base.heartbeatInterval(out)).hasMessage("heartbeatInterval : " + out
					+ " (expected: 10 ms..600 s)");
		}
		assertThat(base.heartbeatInterval(NettyKVTransport.MIN_HEARTBEAT_INTERVAL).settings().heartbeatMillis())
				.isEqualTo(10);
		assertThat(base.heartbeatInterval(Duration.ofNanos(10_000_001)).settings().heartbeatMillis())
				.as("announced rounded up: the peer waits a little longer, never less").isEqualTo(11);
		assertThat(base.heartbeatInterval(NettyKVTransport.MAX_HEARTBEAT_INTERVAL).settings().heartbeatMillis())
				.isEqualTo(600_000);
		assertThatThrownBy(() -> base.eventLoopThreads(0)).hasMessage("eventLoopThreads : 0 (expected: >= 1)");
		assertThatThrownBy(() -> base.heartbeatInterval(null)).isInstanceOf(NullPointerException.class)
				.hasMessage("interval");
	}

	@Test
	void listenAndConnectAreLazy() {
		NettyKVTransport transport = NettyKVTransport.create();
		AtomicInteger accepted = new AtomicInteger();
		transport.listen(new HostPort("127.0.0.1", 0), c -> {
			accepted.incrementAndGet();
			return new RecordingHandler();
		});
		transport.connect(new HostPort("127.0.0.1", 1), new RecordingHandler());
		assertThat(transport.hasEventLoopGroup()).isFalse();
		transport.dispose();
		StepVerifier.create(transport.onDispose()).expectComplete().verify(TIMEOUT);
	}

	@Test
	void listenerReportsTheRealPortAndDisposes() {
		NettyKVTransport transport = NettyKVTransport.create();
		try {
			StepVerifier.create(transport.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler()))
					.assertNext(listener -> {
						assertThat(listener.address().host()).isEqualTo("127.0.0.1");
						assertThat(listener.address().port()).isPositive();
						listener.dispose();
						assertThat(listener.isDisposed()).isTrue();
					})
					.expectComplete()
					.verify(TIMEOUT);
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void listenOnAPortInUseFailsNamingTheAddress() throws Exception {
		NettyKVTransport transport = NettyKVTransport.create();
		try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			HostPort address = new HostPort("127.0.0.1", taken.getLocalPort());
			StepVerifier.create(transport.listen(address, c -> new RecordingHandler()))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
							.hasMessageStartingWith("cannot listen on " + address + ": "))
					.verify(TIMEOUT);
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void handshakeThenMessagesFlowBothWays() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create())) {
			KVMessage.Hello hello = new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, Samples.layout(1));
			StepVerifier.create(Sent.now(lo.connected, hello)).expectComplete().verify(TIMEOUT);
			assertThat(lo.acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(hello);

			KVMessage.HelloAck ack = new KVMessage.HelloAck(Samples.layout(0));
			StepVerifier.create(Sent.now(lo.accepted, ack)).expectComplete().verify(TIMEOUT);
			assertThat(lo.connectedHandler.nextMessage(TIMEOUT)).isEqualTo(ack);

			assertThat(lo.connected.isActive()).isTrue();
			assertThat(lo.connected.id()).isNotBlank();
			assertThat(lo.connected.remoteAddress()).isEqualTo(lo.listener.address());
			assertThat(lo.accepted.remoteAddress().host()).isEqualTo("127.0.0.1");
		}
	}

	@Test
	void messagesAndDataArriveInTheOrderTheyWereHandedOver() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create().maxFrameLength(4096))) {
			MemoryRegion src = Samples.randomRegion(1 << 16, 7);
			MemoryRegion dst = MemoryRegion.allocate(1 << 16, 1);
			AtomicLong received = new AtomicLong();
			lo.connectedHandler.sinks = h -> new RegionSink(dst, h, received, () -> { });
			List<Object> expected = new ArrayList<>();
			for (int i = 0; i < 16; i++) {
				KVMessage.Status status = new KVMessage.Status(i, io.kvferry.KVPoll.SUCCESS, 0, "");
				lo.accepted.send(status);
				expected.add(status);
				DataHeader header = new DataHeader(i, RegionKind.KV, 0, i * 4096L, 4096, 4096, 1);
				lo.accepted.send(new DataBlock(header, src.address() + i * 4096L, 4096));
				expected.add(header);
			}
			KVMessage.AbortAck last = new KVMessage.AbortAck(99);
			StepVerifier.create(Sent.now(lo.accepted, last)).expectComplete().verify(TIMEOUT);
			expected.add(last);
			lo.connectedHandler.nextMessages(17, TIMEOUT);
			assertThat(lo.connectedHandler.events).containsExactlyElementsOf(expected);
			assertThat(Samples.read(dst, 0, 1 << 16)).isEqualTo(Samples.read(src, 0, 1 << 16));
		}
	}

	@Test
	void contiguousBlocksLargerThanTheFrameLimitAreCopiedByteExact() throws Exception {
		int size = 3 << 20;
		try (Loopback lo = Loopback.open(NettyKVTransport.create().maxFrameLength(64 * 1024))) {
			MemoryRegion src = Samples.randomRegion(size, 11);
			MemoryRegion dst = MemoryRegion.allocate(size, 1);
			Transfer transfer = new Transfer(dst, size);
			lo.connectedHandler.sinks = transfer::sink;
			// Odd sizes and offsets: 1 MiB + 3, then the rest in two uneven blocks.
			int a = (1 << 20) + 3;
			int b = 777_777;
			send(lo.accepted, src, 0, a);
			send(lo.accepted, src, a, b);
			send(lo.accepted, src, a + b, size - a - b);
			transfer.await();
			assertThat(Samples.read(dst, 0, size)).isEqualTo(Samples.read(src, 0, size));
			assertThat(lo.accepted.queuedBytes()).isZero();
		}
	}

	@Test
	void nioTransportCarriesMessagesAndDataToo() throws Exception {
		int size = 1 << 20;
		try (Loopback lo = Loopback.open(NettyKVTransport.create().preferNative(false).maxFrameLength(100_000))) {
			assertThat(lo.accepted.channel()).isInstanceOf(io.netty.channel.socket.nio.NioSocketChannel.class);
			MemoryRegion src = Samples.randomRegion(size, 12);
			MemoryRegion dst = MemoryRegion.allocate(size, 1);
			Transfer transfer = new Transfer(dst, size);
			lo.connectedHandler.sinks = transfer::sink;
			send(lo.accepted, src, 0, size);
			StepVerifier.create(Sent.now(lo.accepted, new KVMessage.AbortAck(1))).expectComplete().verify(TIMEOUT);
			transfer.await();
			assertThat(lo.connectedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
			assertThat(Samples.read(dst, 0, size)).isEqualTo(Samples.read(src, 0, size));
		}
	}

	@Test
	void runsOnTheCallersEventLoopGroupAndLeavesItRunningWhenDisposed() throws Exception {
		MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
				new DefaultThreadFactory("caller-loop", true), NioIoHandler.newFactory());
		try {
			NettyKVTransport transport = NettyKVTransport.create().runOn(group);
			try (Loopback lo = Loopback.open(transport)) {
				assertThat(lo.accepted.channel()).isInstanceOf(io.netty.channel.socket.nio.NioSocketChannel.class);
				assertThat(lo.connected.channel().eventLoop().parent()).isSameAs(group);
				assertThat(lo.accepted.channel().eventLoop().parent()).isSameAs(group);
				KVMessage.AbortAck ack = new KVMessage.AbortAck(3);
				StepVerifier.create(Sent.now(lo.accepted, ack)).expectComplete().verify(TIMEOUT);
				assertThat(lo.connectedHandler.nextMessage(TIMEOUT)).isEqualTo(ack);
			}
			StepVerifier.create(transport.onDispose()).expectComplete().verify(TIMEOUT);
			assertThat(transport.isDisposed()).isTrue();
			assertThat(group.isShuttingDown()).as("the caller's group is the caller's to stop").isFalse();
		}
		finally {
			group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
		}
	}

	@Test
	void aGroupThatCannotRunChannelsIsRefusedWhenTheTransportFirstListens() {
		// An in-JVM (local channel) group: an I/O event loop group, but not one that runs sockets.
		MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, LocalIoHandler.newFactory());
		try {
			NettyKVTransport transport = NettyKVTransport.create().runOn(group);
			StepVerifier.create(transport.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler()))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
							.hasMessageContaining("expected: an io_uring, Epoll or NIO I/O handler"))
					.verify(TIMEOUT);
			transport.disposeNow(TIMEOUT);
		}
		finally {
			group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
		}
	}

	@ParameterizedTest(name = "native {0}")
	@ValueSource(booleans = { true, false })
	void largeContiguousPayloadsAreReadStraightIntoTheirDestination(boolean preferNative) throws Exception {
		int size = 8 << 20;
		try (Loopback lo = Loopback.open(NettyKVTransport.create().preferNative(preferNative))) {
			MemoryRegion src = Samples.randomRegion(size, 5);
			MemoryRegion dst = MemoryRegion.allocate(size, 1);
			Transfer transfer = new Transfer(dst, size);
			lo.connectedHandler.sinks = transfer::sink;
			// Two 4 MiB frames: after each header, reads land in the destination, not in a pooled buffer.
			send(lo.accepted, src, 0, size / 2);
			send(lo.accepted, src, size / 2, size / 2);
			transfer.await();
			assertThat(Samples.read(dst, 0, size)).isEqualTo(Samples.read(src, 0, size));
			assertThat(transfer.landed.get()).as("bytes read in place").isGreaterThan(size / 2);
		}
	}

	@Test
	void stridedBlocksAreGatheredAndScatteredByteExact() throws Exception {
		// Head slicing: the sender has 8 heads x 128 bytes per token, the receiver 2 heads x 128 bytes per token; the
		// sender moves heads 4..5 of 300 tokens, 3 KiB frames (12 chunks each).
		int tokens = 300;
		try (Loopback lo = Loopback.open(NettyKVTransport.create().maxFrameLength(3 * 1024))) {
			MemoryRegion src = Samples.randomRegion(tokens * 1024, 13);
			MemoryRegion dst = MemoryRegion.allocate(tokens * 256L, 1);
			Transfer transfer = new Transfer(dst, tokens * 256L);
			lo.connectedHandler.sinks = transfer::sink;
			DataHeader header = new DataHeader(5, RegionKind.KV, 0, 0, 256, 256 + 0, tokens);
			// Receiver stride 256 is contiguous there; also send a second block scattered with stride 512 over half.
			lo.accepted.send(new DataBlock(header, src.address() + 512, 1024));
			transfer.await();
			for (int t = 0; t < tokens; t++) {
				assertThat(Samples.read(dst, t * 256L, 256)).isEqualTo(Samples.read(src, t * 1024L + 512, 256));
			}

			MemoryRegion scattered = MemoryRegion.allocate(tokens * 512L, 1);
			Transfer second = new Transfer(scattered, tokens / 2 * 256L);
			lo.connectedHandler.sinks = second::sink;
			lo.accepted.send(new DataBlock(new DataHeader(6, RegionKind.KV, 0, 128, 256, 512, tokens / 2),
					src.address(), 2048));
			second.await();
			for (int t = 0; t < tokens / 2; t++) {
				assertThat(Samples.read(scattered, 128 + t * 512L, 256)).isEqualTo(Samples.read(src, t * 2048L, 256));
			}
		}
	}

	@Test
	void blocksBehindAClosedGateAreDropped() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create())) {
			MemoryRegion src = Samples.randomRegion(1024, 17);
			DataHeader dropped = new DataHeader(7, RegionKind.KV, 0, 0, 1024, 1024, 1);
			DataHeader kept = new DataHeader(8, RegionKind.KV, 0, 0, 1024, 1024, 1);
			lo.accepted.send(new DataBlock(dropped, src.address(), 1024, () -> false));
			lo.accepted.send(new DataBlock(kept, src.address(), 1024, () -> true));
			lo.accepted.send(new KVMessage.AbortAck(7));
			lo.connectedHandler.nextMessage(TIMEOUT);
			assertThat(lo.connectedHandler.events).containsExactly(kept, new KVMessage.AbortAck(7));
			assertThat(lo.accepted.blocksDropped()).isEqualTo(1);
		}
	}

	@Test
	void closeReachesBothHandlersOnceWithTheReason() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create())) {
			lo.connected.send(new KVMessage.Abort(1, "bye"));
			lo.connected.close("decode shutting down");
			assertThat(lo.connectedHandler.awaitClose(TIMEOUT)).isEqualTo("decode shutting down");
			assertThat(lo.acceptedHandler.awaitClose(TIMEOUT)).startsWith("connection closed by peer 127.0.0.1:");
			// The message queued before close() was still delivered.
			assertThat(lo.acceptedHandler.events).containsExactly(new KVMessage.Abort(1, "bye"));
			StepVerifier.create(Sent.now(lo.connected, new KVMessage.AbortAck(1)))
					.expectErrorMatches(e -> e instanceof KVFerryException && e.getMessage()
							.endsWith("closed before the message was queued: decode shutting down"))
					.verify(TIMEOUT);
			assertThat(lo.connected.isActive()).isFalse();
			assertThat(lo.connectedHandler.closeReasons).hasSize(1);
			assertThat(lo.acceptedHandler.closeReasons).hasSize(1);
		}
	}

	@Test
	void disposingTheListenerClosesItsConnections() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create())) {
			lo.listener.dispose();
			assertThat(lo.acceptedHandler.awaitClose(TIMEOUT)).isEqualTo("listener on " + lo.listener.address()
					+ " disposed");
			assertThat(lo.connectedHandler.awaitClose(TIMEOUT)).contains("closed by peer");
		}
	}

	@Test
	void connectionRefusedNamesHostAndPort() throws Exception {
		int port;
		try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			port = s.getLocalPort();
		}
		NettyKVTransport transport = NettyKVTransport.create();
		try {
			StepVerifier.create(transport.connect(new HostPort("127.0.0.1", port), new RecordingHandler()))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
							.hasMessage("cannot connect: connection refused by 127.0.0.1:" + port + " (nothing listens on "
									+ "that port, or a firewall rejects it)"))
					.verify(TIMEOUT);
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void anUnresolvableHostIsNamedAsSuch() {
		// ".invalid" never resolves.
		NettyKVTransport transport = NettyKVTransport.create();
		try {
			StepVerifier.create(transport.connect(new HostPort("prefill-a.invalid", 4100), new RecordingHandler()))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
							.hasMessage("cannot connect: unknown host: the name of prefill-a.invalid:4100 does not "
									+ "resolve"))
					.verify(Duration.ofSeconds(30));
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void aPeerThatNeverAcceptsIsAConnectTimeoutNotARefusal() {
		NettyKVTransport transport = NettyKVTransport.create().connectTimeout(Duration.ofMillis(300));
		try (DeafListener deaf = DeafListener.open()) {
			HostPort address = deaf.address();
			StepVerifier.create(transport.connect(address, new RecordingHandler()))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
							.hasMessage("cannot connect within 300 ms: " + address + " did not accept the connection in "
									+ "time (the host is down, or a firewall drops its packets)"))
					.verify(TIMEOUT);
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void peerWithAnotherProtocolVersionFailsTheConnectNamingBothVersions() throws Exception {
		assertThat(connectToRawPeer(new byte[] { 'K', 'V', 'F', 'R', 0, 2 }))
				.isInstanceOf(ProtocolException.class)
				.hasMessageContaining("incompatible kvferry protocol version : 2 (expected: "
						+ KVMessage.PROTOCOL_VERSION + ")");
	}

	@Test
	void peerThatIsNotKvferryFailsTheConnect() throws Exception {
		assertThat(connectToRawPeer("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.US_ASCII)))
				.isInstanceOf(ProtocolException.class)
				.hasMessageContaining("not a kvferry peer");
	}

	@Test
	void listenerDisconnectsAForeignClientWithoutCallingTheAcceptor() throws Exception {
		NettyKVTransport transport = NettyKVTransport.create();
		AtomicInteger accepted = new AtomicInteger();
		try {
			KVTransport.Listener listener = transport.listen(new HostPort("127.0.0.1", 0), c -> {
				accepted.incrementAndGet();
				return new RecordingHandler();
			}).block(TIMEOUT);
			try (Socket socket = new Socket("127.0.0.1", listener.address().port())) {
				socket.setSoTimeout((int) TIMEOUT.toMillis());
				socket.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
				InputStream in = socket.getInputStream();
				assertThat(in.readNBytes(6)).containsExactly('K', 'V', 'F', 'R', 0, KVMessage.PROTOCOL_VERSION);
				// The listener's AUTH frame (no secret: flags 0, zero nonce, 16 MiB frames, 5 s heartbeats, it dialled
				// nothing), then the close.
				byte[] auth = in.readNBytes(5 + 49);
				assertThat(auth).startsWith(0, 0, 0, 50, 0x11, 0).endsWith(0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x13, 0x88,
						0, 0, 0, 0, 0, 0, 0, 0).containsOnly(0, 1, 50, 0x11, 0x13, 0x88);
				assertThat(in.read()).as("connection closed by the listener").isEqualTo(-1);
			}
			assertThat(accepted).hasValue(0);
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void disposedTransportRefusesNewWork() {
		NettyKVTransport transport = NettyKVTransport.create();
		transport.dispose();
		assertThat(transport.isDisposed()).isTrue();
		StepVerifier.create(transport.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler()))
				.expectErrorMessage("transport disposed")
				.verify(TIMEOUT);
	}

	/** Accepts one connection on a raw server socket that answers with {@code preface}; returns the connect error. */
	private static Throwable connectToRawPeer(byte[] preface) throws Exception {
		NettyKVTransport transport = NettyKVTransport.create();
		try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			server.setSoTimeout((int) TIMEOUT.toMillis());
			CompletableFuture<KVConnection> result = transport
					.connect(new HostPort("127.0.0.1", server.getLocalPort()), new RecordingHandler()).toFuture();
			try (Socket peer = server.accept()) {
				OutputStream out = peer.getOutputStream();
				out.write(preface);
				out.flush();
				return Mono.fromFuture(result).map(c -> (Throwable) new AssertionError("connected: " + c))
						.onErrorResume(Mono::just).block(TIMEOUT);
			}
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	private static void send(KVConnection connection, MemoryRegion src, long offset, int length) {
		DataHeader header = new DataHeader(1, RegionKind.KV, 0, offset, length, length, 1);
		connection.send(new DataBlock(header, src.address() + offset, length));
	}

	/** Scatters frames into {@code dst} and signals when {@code total} payload bytes arrived. */
	static final class Transfer {

		private final MemoryRegion dst;
		private final long total;
		private final AtomicLong received = new AtomicLong();
		final AtomicLong landed = new AtomicLong();
		private final CountDownLatch done = new CountDownLatch(1);

		Transfer(MemoryRegion dst, long total) {
			this.dst = dst;
			this.total = total;
		}

		RegionSink sink(DataHeader header) {
			return new RegionSink(dst, header, received, landed, () -> {
				if (received.get() == total) {
					done.countDown();
				}
			});
		}

		void await() throws InterruptedException {
			if (!done.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
				throw new AssertionError("received " + received.get() + " of " + total + " bytes");
			}
		}
	}
}
