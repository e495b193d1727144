package io.kvferry.transport.ucx;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.RecordingHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * The shared secret on the UCX handshake, over real loopback sockets and UCX's TCP transport: both sides with the same
 * secret connect; every other pairing fails on the connecting side with the reason and never reaches the listener's
 * acceptor. A peer without the secret learns nothing of the listener (a challenge nonce, then a refusal: no worker
 * address, no connection id, no key), and a relay that forwards a real decode's handshake to the listener is refused
 * for the address decode's socket reached.
 */
class UcxSharedSecretTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final String SECRET = "ucx-secret-test-0123456789abcdef";

	private final List<UcxKVTransport> transports = new ArrayList<>();
	private final AtomicInteger accepted = new AtomicInteger();
	private KVTransport.Listener listener;

	@BeforeAll
	static void needsUcx() {
		UcxTestSupport.assumeUcx();
	}

	@AfterEach
	void disposeAll() {
		transports.forEach(t -> t.disposeNow(T));
	}

	private UcxKVTransport transport(String secret) {
		UcxKVTransport t = UcxTestSupport.tcp().handshakeTimeout(Duration.ofSeconds(5));
		if (secret != null) {
			t = t.sharedSecret(secret);
		}
		transports.add(t);
		return t;
	}

	private HostPort listen(String secret) {
		listener = transport(secret).listen(new HostPort("127.0.0.1", 0), c -> {
			accepted.incrementAndGet();
			return new RecordingHandler();
		}).block(T);
		return listener.address();
	}

	@Test
	void bothSidesWithTheSameSecretConnectAndExchangeMessages() throws Exception {
		RecordingHandler acceptedHandler = new RecordingHandler();
		UcxKVTransport prefill = transport(SECRET);
		listener = prefill.listen(new HostPort("127.0.0.1", 0), c -> acceptedHandler).block(T);
		KVConnection decode = transport(SECRET).connect(listener.address(), new RecordingHandler()).block(T);
		StepVerifier.create(decode.write(new KVMessage.AbortAck(7))).expectComplete().verify(T);
		assertThat(acceptedHandler.nextMessage(T)).isEqualTo(new KVMessage.AbortAck(7));
	}

	@Test
	void aDifferentSecretIsRefusedByTheListenerWithTheReason() {
		HostPort address = listen(SECRET);
		expectRefused(transport("another-secret-0123456789abcdef"), address,
				"shared secret mismatch: the peer's proof does not verify");
	}

	@Test
	void aDecodeWithoutTheSecretIsToldTheListenerRequiresOne() {
		HostPort address = listen(SECRET);
		expectRefused(transport(null), address, "peer did not prove the shared secret: this listener requires one "
				+ "and the peer has none");
	}

	@Test
	void aDecodeWithASecretRefusesAListenerThatHasNone() {
		HostPort address = listen(null);
		expectRefused(transport(SECRET), address, "the peer proves a shared secret and this listener has none");
	}

	@Test
	void aPeerWithoutTheSecretGetsAChallengeThenARefusalAndNothingOfTheListener() throws Exception {
		HostPort address = listen(SECRET);
		try (Socket s = new Socket()) {
			s.connect(new InetSocketAddress(address.host(), address.port()), (int) T.toMillis());
			s.setSoTimeout((int) T.toMillis());
			DataOutputStream out = new DataOutputStream(s.getOutputStream());
			// A hello as a decode with a secret sends it: a nonce, the address its socket reached.
			start(out, 0);
			out.writeLong(42);
			out.writeInt(3);
			out.write(new byte[] { 1, 2, 3 });
			out.writeUTF("tcp");
			out.writeUTF("");
			out.writeBoolean(false);
			out.writeByte(UcxDataPath.AUTO.ordinal());
			out.writeInt(5000);
			out.writeInt(32);
			out.write(new byte[32]);
			out.writeUTF(new HostPort(s.getInetAddress().getHostAddress(), s.getPort()).toString());
			out.writeInt(0);
			out.flush();

			DataInputStream in = new DataInputStream(s.getInputStream());
			expectStart(in, 2);
			assertThat(in.readInt()).as("challenge nonce length").isEqualTo(32);
			in.readFully(new byte[32]);
			// A proof made without the secret.
			start(out, 3);
			out.writeInt(32);
			out.write(new byte[32]);
			out.flush();
			expectStart(in, 1);
			assertThat(in.readUTF()).isEqualTo("shared secret mismatch: the peer's proof does not verify");
			assertThat(in.read()).as("nothing after the refusal").isEqualTo(-1);
		}
		assertThat(accepted).hasValue(0);
	}

	@Test
	void aRelayForwardingARealDecodesHandshakeIsRefusedForTheAddressDecodeReached() throws Exception {
		HostPort address = listen(SECRET);
		try (Relay relay = new Relay(address)) {
			expectRefused(transport(SECRET), relay.address(), "dialled endpoint mismatch: the peer's socket reached "
					+ relay.address() + ", this listener's is " + address + " (a relay between them?)");
		}
		// Dialling the listener itself still connects.
		StepVerifier.create(transport(SECRET).connect(address, new RecordingHandler())).expectNextCount(1)
				.expectComplete().verify(T);
		assertThat(accepted).hasValue(1);
	}

	private void expectRefused(UcxKVTransport decode, HostPort address, String reason) {
		StepVerifier.create(decode.connect(address, new RecordingHandler()))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class).hasMessageContaining(
						reason))
				.verify(T);
		assertThat(accepted).as("the listener's acceptor ran").hasValue(0);
	}

	private static void start(DataOutputStream out, int step) throws IOException {
		out.writeInt(0x4b564655);
		out.writeShort(2);
		out.writeInt(KVMessage.PROTOCOL_VERSION);
		out.writeByte(step);
	}

	private static void expectStart(DataInputStream in, int step) throws IOException {
		assertThat(in.readInt()).isEqualTo(0x4b564655);
		assertThat(in.readUnsignedShort()).isEqualTo(2);
		assertThat(in.readInt()).isEqualTo(KVMessage.PROTOCOL_VERSION);
		assertThat(in.readUnsignedByte()).as("step").isEqualTo(step);
	}

	/**
	 * A party a decode rank was made to dial (a registry entry pointing at it) that forwards every byte both ways to
	 * the real listener, on threads of its own.
	 */
	private static final class Relay implements AutoCloseable {
		private final ServerSocket server;
		private final List<Socket> sockets = new ArrayList<>();

		Relay(HostPort target) throws IOException {
			server = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
			Thread acceptor = new Thread(() -> {
				try {
					Socket in = server.accept();
					Socket out = new Socket(target.host(), target.port());
					synchronized (sockets) {
						sockets.add(in);
						sockets.add(out);
					}
					pipe(in, out);
					pipe(out, in);
				}
				catch (IOException e) {
					// Closed before anyone dialled.
				}
			}, "relay-accept");
			acceptor.setDaemon(true);
			acceptor.start();
		}

		HostPort address() {
			return new HostPort("127.0.0.1", server.getLocalPort());
		}

		private static void pipe(Socket from, Socket to) {
			Thread t = new Thread(() -> {
				try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
					in.transferTo(out);
				}
				catch (IOException e) {
					// One side closed: the other follows.
				}
			}, "relay-pipe");
			t.setDaemon(true);
			t.start();
		}

		@Override
		public void close() throws IOException {
			server.close();
			synchronized (sockets) {
				for (Socket s : sockets) {
					s.close();
				}
			}
		}
	}
}
