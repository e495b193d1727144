package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.test.RecordingHandler;
import io.kvferry.test.Samples;
import io.kvferry.test.Sent;
import io.kvferry.HostPort;
import io.kvferry.MemoryRegion;
import io.kvferry.ProtocolException;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** The shared secret in the transport handshake, over real loopback sockets. */
class SharedSecretTransportTest {

	@Test
	void sidesWithTheSameSecretConnectAndCarryMessagesAndData() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create().sharedSecret("0123456789abcdef0123456789abcdef"))) {
			KVMessage.Hello hello = new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, Samples.layout(1));
			StepVerifier.create(Sent.now(lo.connected, hello)).expectComplete().verify(TIMEOUT);
			assertThat(lo.acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(hello);

			MemoryRegion src = Samples.randomRegion(1 << 20, 41);
			MemoryRegion dst = MemoryRegion.allocate(1 << 20, 1);
			NettyKVTransportTest.Transfer transfer = new NettyKVTransportTest.Transfer(dst, 1 << 20);
			lo.connectedHandler.sinks = transfer::sink;
			lo.accepted.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, 1 << 20, 1 << 20, 1),
					src.address(), 1 << 20));
			transfer.await();
			assertThat(Samples.read(dst, 0, 1 << 20)).isEqualTo(Samples.read(src, 0, 1 << 20));
		}
	}

	@Test
	void differentSecretsFailBothSidesWithTheReason() throws Exception {
		expectBothSidesFail(NettyKVTransport.create().sharedSecret("prefill-secret"),
				NettyKVTransport.create().sharedSecret("decode-secret"),
				"shared secret mismatch: the peer's proof does not verify",
				"shared secret mismatch: the peer's proof does not verify");
	}

	@Test
	void connectingSideWithoutASecretFailsAgainstAListenerThatHasOne() throws Exception {
		expectBothSidesFail(NettyKVTransport.create().sharedSecret(new byte[] { 1, 2, 3, 4 }),
				NettyKVTransport.create(),
				"peer did not prove the shared secret: it has none configured",
				"shared secret mismatch: the peer requires a shared secret and none is configured here");
	}

	@Test
	void listenerWithoutASecretRejectsAConnectingSideThatHasOne() throws Exception {
		expectBothSidesFail(NettyKVTransport.create(),
				NettyKVTransport.create().sharedSecret(new byte[] { 1, 2, 3, 4 }),
				"shared secret mismatch: the peer requires a shared secret and none is configured here",
				"peer did not prove the shared secret: it has none configured");
	}

	/**
	 * Connects {@code connecting} to a listener of {@code listening}: the connect must error with a
	 * {@link ProtocolException} carrying {@code connectingReason}, the listener must log {@code listeningReason} for
	 * the accepted connection and never call its acceptor.
	 */
	private static void expectBothSidesFail(NettyKVTransport listening, NettyKVTransport connecting,
			String listeningReason, String connectingReason) throws Exception {
		AtomicInteger accepted = new AtomicInteger();
		try (LogRecorder log = LogRecorder.of(NettyKVConnection.class)) {
			KVTransport.Listener listener = listening.listen(new HostPort("127.0.0.1", 0), c -> {
				accepted.incrementAndGet();
				return new RecordingHandler();
			}).block(TIMEOUT);
			StepVerifier.create(connecting.connect(listener.address(), new RecordingHandler()))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProtocolException.class)
							.hasMessageStartingWith("handshake with " + listener.address() + " failed: ")
							.hasMessageContaining(connectingReason))
					.verify(TIMEOUT);
			String acceptedSide = "L:/127.0.0.1:" + listener.address().port() + " - R:";
			assertThat(log.await(line -> line.startsWith("WARN ") && line.contains(acceptedSide)
					&& line.contains("closing: " + listeningReason), TIMEOUT)).isNotNull();
			assertThat(accepted).hasValue(0);
			// The secret itself never reaches a log line.
			assertThat(log.lines())
					.noneMatch(line -> line.contains("prefill-secret") || line.contains("decode-secret"));
		}
		finally {
			connecting.disposeNow(TIMEOUT);
			listening.disposeNow(TIMEOUT);
		}
	}
}
