package io.kvferry.test.tck;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.HostPort;
import io.kvferry.ProtocolException;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.RecordingHandler;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * The contract of a transport whose connections start with a handshake that can refuse a peer (a protocol preface, a
 * shared secret, TLS): on top of {@link TransportTck}, a refused peer's connect fails with a
 * {@link ProtocolException} that says why, the listener's acceptor never sees the refused connection (so the engine
 * never talks to an unproven peer), and the listener keeps serving peers that pass.
 */
public abstract class HandshakeTransportTck extends TransportTck {

	/**
	 * @param server the test's listening transport
	 * @return a new connecting transport whose handshake {@code server} refuses (another secret, an untrusted
	 *         certificate, a secret the server does not expect)
	 */
	protected abstract KVTransport createRefusedClient(KVTransport server);

	@Test
	void aRefusedPeerFailsToConnectAndNeverReachesTheAcceptor() throws Exception {
		KVTransport refused = createRefusedClient(server);
		try {
			AtomicInteger accepted = new AtomicInteger();
			RecordingHandler acceptedHandler = new RecordingHandler();
			KVTransport.Listener listener = server.listen(new HostPort("127.0.0.1", 0), c -> {
				accepted.incrementAndGet();
				return acceptedHandler;
			}).block(TIMEOUT);
			Objects.requireNonNull(listener, "listener");
			try {
				RecordingHandler refusedHandler = new RecordingHandler();
				StepVerifier.create(refused.connect(listener.address(), refusedHandler))
						.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProtocolException.class)
								.hasMessageContaining("handshake"))
						.verify(TIMEOUT);
				assertThat(refusedHandler.events).isEmpty();

				// A peer that passes is served, and is the only one the acceptor ever saw.
				KVConnection good = client.connect(listener.address(), new RecordingHandler()).block(TIMEOUT);
				Objects.requireNonNull(good, "good");
				good.send(new KVMessage.AbortAck(7));
				assertThat(acceptedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(7));
				assertThat(accepted).hasValue(1);
			}
			finally {
				listener.dispose();
			}
		}
		finally {
			dispose(refused);
		}
	}
}
