package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.RecordingHandler;
import io.kvferry.transport.netty.internal.DialledEndpoint;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.kvferry.transport.netty.internal.SharedSecret;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.junit.jupiter.api.Test;

/**
 * Heartbeats over real sockets with short intervals: silent peers are dropped on both sides after two of the intervals
 * they announced in their handshake (whatever this side's own), idle ones kept.
 */
class HeartbeatTest {

	private static final Duration INTERVAL = Duration.ofMillis(500);
	/** The rule is two intervals of silence; the slack is for a busy 2-core machine's timers, not a second rule. */
	private static final Duration SLACK = Duration.ofMillis(750);
	/**
	 * What a listener without a shared secret writes first: the preface, then AUTH (flags 0, zero nonce, heartbeats
	 * every {@link #INTERVAL}).
	 */
	private static final byte[] HANDSHAKE = handshake(DialledEndpoint.NONE, INTERVAL);

	@Test
	void listenerClosesAPeerThatWentSilentAfterTheHandshake() throws Exception {
		// This side's own interval is ten times the peer's: the peer is judged by the one it announced.
		assertListenerClosesASilentPeer(INTERVAL.multipliedBy(10), INTERVAL, "1 s");
	}

	@Test
	void aPeerThatAnnouncedALongerIntervalIsNotDroppedAfterTwoOfThisSidesOwn() throws Exception {
		// Closed after two of its own intervals, 3 s, not after two of this side's, 1 s.
		assertListenerClosesASilentPeer(INTERVAL, INTERVAL.multipliedBy(3), "3 s");
	}

	/**
	 * A listener of interval {@code own} and a peer that announces {@code announced} in its handshake and then neither
	 * reads nor writes: the listener closes it after two of the announced intervals.
	 */
	private static void assertListenerClosesASilentPeer(Duration own, Duration announced, String window)
			throws Exception {
		NettyKVTransport transport = NettyKVTransport.create().heartbeatInterval(own);
		RecordingHandler handler = new RecordingHandler();
		try {
			KVTransport.Listener listener = transport.listen(new HostPort("127.0.0.1", 0), c -> handler)
					.block(TIMEOUT);
			try (Socket silent = new Socket("127.0.0.1", listener.address().port())) {
				long lastWrite = System.nanoTime();
				silent.getOutputStream().write(handshake(DialledEndpoint.NONE, announced));
				byte[] listeners = handshake(DialledEndpoint.NONE, own);
				assertThat(silent.getInputStream().readNBytes(listeners.length)).isEqualTo(listeners);
				assertThat(handler.awaitClose(TIMEOUT)).isEqualTo("no heartbeat from 127.0.0.1:"
						+ silent.getLocalPort() + " for 2 intervals (" + window + ")");
				assertClosedByTheRule(lastWrite, announced);
			}
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void connectingSideClosesAListenerThatWentSilent() throws Exception {
		NettyKVTransport transport = NettyKVTransport.create().heartbeatInterval(INTERVAL);
		RecordingHandler handler = new RecordingHandler();
		try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			server.setSoTimeout((int) TIMEOUT.toMillis());
			HostPort address = new HostPort("127.0.0.1", server.getLocalPort());
			CompletableFuture<KVConnection> connection = transport.connect(address, handler).toFuture();
			try (Socket silent = server.accept()) {
				long lastWrite = System.nanoTime();
				silent.getOutputStream().write(HANDSHAKE);
				InputStream in = silent.getInputStream();
				// The connecting side's AUTH also says what it dialled.
				byte[] expected = handshake(new DialledEndpoint(address.toString(), address.toString()), INTERVAL);
				assertThat(in.readNBytes(expected.length)).isEqualTo(expected);
				assertThat(connection.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).isActive()).isTrue();
				assertThat(handler.awaitClose(TIMEOUT))
						.isEqualTo("no heartbeat from " + address + " for 2 intervals (1 s)");
				assertClosedByTheRule(lastWrite, INTERVAL);
				// Our side wrote heartbeats while it waited.
				assertThat(in.readNBytes(5)).containsExactly(0, 0, 0, 1, 0x10);
			}
		}
		finally {
			transport.disposeNow(TIMEOUT);
		}
	}

	@Test
	void idleConnectionStaysUpOnHeartbeats() throws Exception {
		// A longer interval than the silence tests: a busy 2-core machine must not look like a dead peer.
		try (Loopback lo = Loopback.open(NettyKVTransport.create().heartbeatInterval(Duration.ofMillis(400)))) {
			CountDownLatch acceptedSide = countHeartbeats(lo.accepted, 4);
			CountDownLatch connectedSide = countHeartbeats(lo.connected, 4);
			assertThat(acceptedSide.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
			assertThat(connectedSide.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
			assertThat(lo.accepted.isActive()).isTrue();
			assertThat(lo.connected.isActive()).isTrue();
			assertThat(lo.acceptedHandler.closeReasons).isEmpty();
			assertThat(lo.connectedHandler.closeReasons).isEmpty();
			assertThat(lo.accepted.heartbeatsReceived()).isGreaterThanOrEqualTo(4);
		}
	}

	/** Closed two of the peer's intervals after its last bytes: not before, and not much after. */
	private static void assertClosedByTheRule(long lastWriteNanos, Duration peerInterval) {
		Duration silence = Duration.ofNanos(System.nanoTime() - lastWriteNanos);
		assertThat(silence).isGreaterThanOrEqualTo(peerInterval.multipliedBy(2))
				.isLessThanOrEqualTo(peerInterval.multipliedBy(2).plus(SLACK));
	}

	private static byte[] handshake(DialledEndpoint dialled, Duration heartbeat) {
		ByteBuf preface = KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, KVMessage.PROTOCOL_VERSION);
		ByteBuf auth = KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT, new KVFrameCodec.Auth(false,
				new byte[SharedSecret.NONCE_LENGTH], 16 << 20, (int) heartbeat.toMillis(), dialled));
		try {
			byte[] bytes = new byte[preface.readableBytes() + auth.readableBytes()];
			preface.readBytes(bytes, 0, preface.readableBytes());
			auth.readBytes(bytes, KVFrameCodec.PREFACE_LENGTH, auth.readableBytes());
			return bytes;
		}
		finally {
			preface.release();
			auth.release();
		}
	}

	private static CountDownLatch countHeartbeats(NettyKVConnection connection, int n) {
		CountDownLatch latch = new CountDownLatch(n);
		connection.channel().pipeline().addLast(new ChannelInboundHandlerAdapter() {
			@Override
			public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
				if (evt == NettyKVConnection.HEARTBEAT_RECEIVED) {
					latch.countDown();
				}
				ctx.fireUserEventTriggered(evt);
			}
		});
		return latch;
	}
}
