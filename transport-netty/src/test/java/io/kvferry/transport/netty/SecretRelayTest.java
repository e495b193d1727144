package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.HostPort;
import io.kvferry.ProtocolException;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.RecordingHandler;
import io.kvferry.transport.netty.internal.DialledEndpoint;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A party without the shared secret relays the handshake between a decode rank that dialled it and a real prefill
 * listener, over real loopback sockets: whether it forwards the bytes unchanged or rewrites the endpoint decode
 * announces, the handshake fails on both sides with the reason, and the listener's acceptor never runs. Decode dialling
 * the listener itself still connects, and so does a relay the listener was told it is reached through (a NAT).
 */
class SecretRelayTest {

	private static final String SECRET = "relay-test-secret-0123456789abcdef";

	private final AtomicInteger accepted = new AtomicInteger();
	private final RecordingHandler acceptedHandler = new RecordingHandler();
	private NettyKVTransport prefill;
	private NettyKVTransport decode;
	private KVTransport.Listener listener;
	private LogRecorder log;

	@BeforeEach
	void decodeSide() {
		decode = NettyKVTransport.create().eventLoopThreads(1).sharedSecret(SECRET);
		log = LogRecorder.of(NettyKVConnection.class);
	}

	@AfterEach
	void disposeBoth() {
		log.close();
		decode.disposeNow(TIMEOUT);
		if (prefill != null) {
			prefill.disposeNow(TIMEOUT);
		}
	}

	private void listen(NettyKVTransport transport) {
		prefill = transport;
		listener = prefill.listen(new HostPort("127.0.0.1", 0), c -> {
			accepted.incrementAndGet();
			return acceptedHandler;
		}).block(TIMEOUT);
	}

	@Test
	void aRelayForwardingTheHandshakeUnchangedIsRefusedByTheListenerForTheEndpointDecodeDialled() throws Exception {
		listen(NettyKVTransport.create().eventLoopThreads(1).sharedSecret(SECRET));
		try (HandshakeRelay relay = HandshakeRelay.forwarding().target(listener.address())) {
			String reason = "dialled endpoint mismatch: the peer dialled " + relay.address() + ", which is not this "
					+ "listener; it answers to " + listener.address() + ".";
			expectRefused(relay.address(), reason);
		}
		expectDirectConnectSucceeds();
	}

	@Test
	void aRelayRewritingTheDialledEndpointToTheListenersOwnFailsTheProofs() throws Exception {
		listen(NettyKVTransport.create().eventLoopThreads(1).sharedSecret(SECRET));
		HostPort real = listener.address();
		try (HandshakeRelay relay = HandshakeRelay.rewriting(d -> new DialledEndpoint(real.toString(),
				real.toString())).target(real)) {
			// The listener takes the rewritten endpoint as its own, then decode's proof, made over the relay's
			// address it dialled, does not verify: the listener never proves anything in return.
			expectRefused(relay.address(), "shared secret mismatch: the peer's proof does not verify");
			assertThat(relay.rewritten()).isEqualTo(1);
		}
		expectDirectConnectSucceeds();
	}

	@Test
	void aRelayTheListenerAdvertisesAsItsAddressIsServedLikeANat() throws Exception {
		try (HandshakeRelay relay = HandshakeRelay.forwarding()) {
			listen(NettyKVTransport.create().eventLoopThreads(1).sharedSecret(SECRET)
					.advertisedAddresses(relay.address()));
			relay.target(listener.address());
			KVConnection conn = decode.connect(relay.address(), new RecordingHandler()).block(TIMEOUT);
			conn.send(new KVMessage.AbortAck(3));
			assertThat(acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(3));
			assertThat(accepted).hasValue(1);
			conn.close("done");
		}
	}

	/**
	 * Decode dials {@code dialled} and must fail with the listener's {@code reason}, which the listener must log for
	 * the connection it accepted, without calling its acceptor.
	 */
	private void expectRefused(HostPort dialled, String reason) throws Exception {
		StepVerifier.create(decode.connect(dialled, new RecordingHandler()))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProtocolException.class)
						.hasMessageStartingWith("handshake with " + dialled
								+ " failed: the peer refused the handshake: " + reason))
				.verify(TIMEOUT);
		String listenerSide = "L:/127.0.0.1:" + listener.address().port() + " - R:";
		assertThat(log.await(line -> line.startsWith("WARN ") && line.contains(listenerSide)
				&& line.contains("closing: " + reason), TIMEOUT)).isNotNull();
		assertThat(accepted).hasValue(0);
		assertThat(log.lines()).noneMatch(line -> line.contains(SECRET));
	}

	private void expectDirectConnectSucceeds() throws InterruptedException {
		KVConnection conn = decode.connect(listener.address(), new RecordingHandler()).block(TIMEOUT);
		conn.send(new KVMessage.AbortAck(1));
		assertThat(acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
		assertThat(accepted).hasValue(1);
		conn.close("done");
	}
}
