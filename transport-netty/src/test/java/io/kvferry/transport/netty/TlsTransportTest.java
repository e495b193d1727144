package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.test.RecordingHandler;
import io.kvferry.test.Samples;
import io.kvferry.test.Sent;
import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.ProtocolException;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.netty.handler.ssl.SslHandler;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** TLS on the transport, with self-signed certificates made in the test, over real loopback sockets. */
class TlsTransportTest {

	private static final int MIB = 1 << 20;

	private static NettyKVTransport secure() {
		return NettyKVTransport.create().secure(TestTls.server(), TestTls.client());
	}

	@Test
	void severalMebibytesArriveByteExactOverTls() throws Exception {
		int size = 4 * MIB;
		try (Loopback lo = Loopback.open(secure().maxFrameLength(MIB))) {
			assertThat(lo.connected.channel().pipeline().get(SslHandler.class)).isNotNull();
			assertThat(lo.accepted.channel().pipeline().get(SslHandler.class).engine().getSession().getProtocol())
					.startsWith("TLS");
			MemoryRegion src = Samples.randomRegion(size, 51);
			MemoryRegion dst = MemoryRegion.allocate(size, 1);
			// Warm-up (TLS and JIT), then the measured transfer of the whole region in uneven blocks.
			transfer(lo, src, dst, MIB);
			long start = System.nanoTime();
			NettyKVTransportTest.Transfer measured = transfer(lo, src, dst, size);
			long nanos = System.nanoTime() - start;
			assertThat(measured.landed.get()).as("no byte read in place: the socket holds ciphertext").isZero();
			assertThat(Samples.read(dst, 0, size)).isEqualTo(Samples.read(src, 0, size));
			System.out.printf("kvferry TLS transfer: %d MiB in %d ms = %.0f MB/s (paranoid leak detection on)%n",
					size / MIB, nanos / 1_000_000, size / (nanos / 1e9) / 1e6);

			KVMessage.Status status = new KVMessage.Status(1, KVPoll.SUCCESS, 0, "");
			StepVerifier.create(Sent.now(lo.accepted, status)).expectComplete().verify(TIMEOUT);
			assertThat(lo.connectedHandler.nextMessage(TIMEOUT)).isEqualTo(status);
		}
	}

	private static NettyKVTransportTest.Transfer transfer(Loopback lo, MemoryRegion src, MemoryRegion dst, int size)
			throws Exception {
		NettyKVTransportTest.Transfer transfer = new NettyKVTransportTest.Transfer(dst, size);
		lo.connectedHandler.sinks = transfer::sink;
		int block = 3 * MIB + 17;
		for (int offset = 0; offset < size; offset += block) {
			int length = Math.min(block, size - offset);
			lo.accepted.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, offset, length, length, 1),
					src.address() + offset, length));
		}
		transfer.await();
		return transfer;
	}

	@Test
	void stridedBlocksAreGatheredAndScatteredOverTls() throws Exception {
		int tokens = 500;
		try (Loopback lo = Loopback.open(secure().maxFrameLength(16 * 1024))) {
			MemoryRegion src = Samples.randomRegion(tokens * 1024, 52);
			MemoryRegion dst = MemoryRegion.allocate(tokens * 512L, 1);
			NettyKVTransportTest.Transfer transfer = new NettyKVTransportTest.Transfer(dst, tokens * 256L);
			lo.connectedHandler.sinks = transfer::sink;
			lo.accepted.send(new DataBlock(new DataHeader(2, RegionKind.KV, 0, 0, 256, 512, tokens),
					src.address() + 256, 1024));
			transfer.await();
			for (int t = 0; t < tokens; t++) {
				assertThat(Samples.read(dst, t * 512L, 256)).isEqualTo(Samples.read(src, t * 1024L + 256, 256));
			}
		}
	}

	@Test
	void tlsAndASharedSecretWorkTogether() throws Exception {
		try (Loopback lo = Loopback.open(secure().sharedSecret("tls-and-secret"))) {
			StepVerifier.create(Sent.now(lo.connected, new KVMessage.AbortAck(3))).expectComplete().verify(TIMEOUT);
			assertThat(lo.acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(3));
		}
	}

	@Test
	void mutualTlsAcceptsAClientCertificateAndRefusesAClientWithout() throws Exception {
		NettyKVTransport listening = NettyKVTransport.create()
				.secure(TestTls.serverRequiringClientCertificates(), TestTls.client());
		try (Loopback lo = Loopback.open(NettyKVTransport.create()
				.secure(TestTls.serverRequiringClientCertificates(), TestTls.clientWithCertificate()))) {
			StepVerifier.create(Sent.now(lo.connected, new KVMessage.AbortAck(4))).expectComplete().verify(TIMEOUT);
			assertThat(lo.acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(4));
		}
		Throwable error = connectError(listening, secure());
		assertThat(error).isInstanceOf(KVFerryException.class);
		assertThat(error.getMessage()).containsAnyOf("TLS handshake failed", "TLS error", "closed by peer");
	}

	@Test
	void plainClientAgainstATlsListenerFailsWithAClearReason() throws Exception {
		try (LogRecorder log = LogRecorder.of(NettyKVConnection.class)) {
			NettyKVTransport listening = secure();
			AtomicInteger accepted = new AtomicInteger();
			KVTransport.Listener listener = listening.listen(new HostPort("127.0.0.1", 0), c -> {
				accepted.incrementAndGet();
				return new RecordingHandler();
			}).block(TIMEOUT);
			NettyKVTransport plain = NettyKVTransport.create();
			try {
				StepVerifier.create(plain.connect(listener.address(), new RecordingHandler()))
						// The listener answers with a TLS alert, then closes; should the alert be lost to a reset,
						// the close before any preface says the same.
						.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
								.message().containsAnyOf(
										"(a TLS alert: the peer requires TLS, this side does not use it)",
										"before it sent a kvferry preface (a listener that requires TLS closes plain "
												+ "connections this way)"))
						.verify(TIMEOUT);
				log.await(line -> line.contains("L:/127.0.0.1:" + listener.address().port())
						&& line.contains("closing: TLS handshake failed: the peer does not speak TLS"), TIMEOUT);
				assertThat(accepted).hasValue(0);
			}
			finally {
				plain.disposeNow(TIMEOUT);
				listening.disposeNow(TIMEOUT);
			}
		}
	}

	@Test
	void tlsClientAgainstAPlainListenerFailsWithAClearReason() throws Exception {
		try (LogRecorder log = LogRecorder.of(NettyKVConnection.class)) {
			NettyKVTransport listening = NettyKVTransport.create();
			KVTransport.Listener listener = listening.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler())
					.block(TIMEOUT);
			NettyKVTransport tls = secure();
			try {
				StepVerifier.create(tls.connect(listener.address(), new RecordingHandler()))
						.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProtocolException.class)
								.hasMessageContaining("TLS handshake failed: the peer does not speak TLS"))
						.verify(TIMEOUT);
				log.await(line -> line.contains("L:/127.0.0.1:" + listener.address().port())
						&& line.contains("(a TLS handshake: the peer uses TLS, this side does not)"), TIMEOUT);
			}
			finally {
				tls.disposeNow(TIMEOUT);
				listening.disposeNow(TIMEOUT);
			}
		}
	}

	@Test
	void untrustedCertificateFailsTheConnect() throws Exception {
		Throwable error = connectError(secure(), NettyKVTransport.create()
				.secure(TestTls.server(), TestTls.clientTrustingAStranger()));
		assertThat(error).isInstanceOf(ProtocolException.class)
				.hasMessageContaining("TLS handshake failed: SSLHandshakeException");
	}

	@Test
	void secureRefusesContextsOfTheWrongKind() {
		NettyKVTransport transport = NettyKVTransport.create();
		assertThatThrownBy(() -> transport.secure(TestTls.client(), TestTls.client()))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("serverContext : a client context (expected: a server SslContext)");
		assertThatThrownBy(() -> transport.secure(TestTls.server(), TestTls.server()))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("clientContext : a server context (expected: a client SslContext)");
		assertThatThrownBy(() -> transport.secure(null, TestTls.client())).isInstanceOf(NullPointerException.class)
				.hasMessage("serverContext");
	}

	/** @return the error of connecting {@code connecting} to a listener of {@code listening} */
	private static Throwable connectError(NettyKVTransport listening, NettyKVTransport connecting) {
		try {
			KVTransport.Listener listener = listening.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler())
					.block(TIMEOUT);
			return connecting.connect(listener.address(), new RecordingHandler())
					.map(c -> (Throwable) new AssertionError("connected: " + c))
					.onErrorResume(Mono::just)
					.block(TIMEOUT);
		}
		finally {
			connecting.disposeNow(TIMEOUT);
			listening.disposeNow(TIMEOUT);
		}
	}
}
