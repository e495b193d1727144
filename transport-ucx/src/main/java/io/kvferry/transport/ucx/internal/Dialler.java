package io.kvferry.transport.ucx.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.Locale;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.HandshakeSecret;
import io.kvferry.spi.KVConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.MonoSink;

/**
 * Decode's side of a handshake, on the node's handshake threads: the short TCP connection to the listener, the shared
 * secret's proofs both ways, then the connection opened on the loop.
 */
final class Dialler {

	private static final Logger log = LoggerFactory.getLogger(Dialler.class);

	private final UcxNode node;

	Dialler(UcxNode node) {
		this.node = node;
	}

	void dial(HostPort remote, ConnectionHandler handler, MonoSink<KVConnection> sink) {
		UcxSettings settings = node.settings;
		UcxConnection c = new UcxConnection(node, UcxNode.newId(), remote, false, handler);
		try {
			node.await(node.onLoop(() -> {
				node.added(c);
				return c;
			}));
			Handshake mine;
			Handshake theirs;
			try (Socket socket = new Socket()) {
				int timeout = (int) Math.max(1, settings.handshakeTimeout().toMillis());
				try {
					socket.connect(new InetSocketAddress(remote.host(), remote.port()), timeout);
				}
				catch (IOException e) {
					throw new KVFerryException("connection refused: nothing listens at " + remote + " (" + e.getMessage()
							+ ")", e);
				}
				socket.setSoTimeout(timeout);
				socket.setTcpNoDelay(true);
				HandshakeSecret secret = settings.secret();
				mine = node.hello(c.id, settings.dataPath(), secret == null ? new byte[0] : secret.newNonce(),
						new HostPort(socket.getInetAddress().getHostAddress(), socket.getPort()).toString());
				try {
					mine.write(socket.getOutputStream());
					theirs = listenerHello(socket, remote, mine);
				}
				catch (SocketTimeoutException e) {
					throw new ProtocolException("UCX handshake with " + remote + " failed: no answer within "
							+ settings.handshakeTimeout());
				}
			}
			Handshake answer = theirs;
			Handshake own = mine;
			node.await(node.onLoop(() -> {
				c.open(answer, own, answer.dataPath(), DataPaths.peerErrorHandling(own, answer));
				log.info("UCX connection {} to {} open: {} (UCX transports {})", c.id(), remote, answer.dataPath(),
						node.describeTls());
				return c;
			}));
			sink.onCancel(() -> c.close("connect cancelled"));
			sink.success(c);
		}
		catch (IOException | RuntimeException e) {
			node.loop.execute(() -> node.removed(c));
			sink.error(e instanceof IOException ? new KVFerryException("UCX handshake with " + remote + " failed: "
					+ e.getMessage(), e) : e);
		}
	}

	/**
	 * Decode's side after its hello: answers the listener's challenge where it sends one, and accepts the listener's
	 * hello only once it proved the secret this side has (over both hellos).
	 */
	private Handshake listenerHello(Socket socket, HostPort remote, Handshake mine) throws IOException {
		HandshakeSecret secret = node.settings.secret();
		HandshakeStep step = Handshake.read(socket.getInputStream(), remote.toString());
		byte[] challenge = null;
		if (step instanceof HandshakeStep.Challenge c) {
			if (secret == null) {
				throw new ProtocolException("UCX handshake with " + remote + " failed: the listener requires a shared "
						+ "secret and this side has none (UcxKVTransport.sharedSecret)");
			}
			challenge = c.nonce();
			Handshake.prove(socket.getOutputStream(), secret.proof(Handshake.LABEL, Handshake.CONNECTING, challenge,
					mine.nonce(), mine.body()));
			step = Handshake.read(socket.getInputStream(), remote.toString());
		}
		if (!(step instanceof Handshake theirs)) {
			throw new ProtocolException("UCX handshake with " + remote + " failed: the listener answered with a "
					+ step.getClass().getSimpleName().toLowerCase(Locale.ROOT) + " (expected: its hello)");
		}
		if (secret != null && (challenge == null || !secret.verify(theirs.proof(), Handshake.LABEL,
				Handshake.ACCEPTING, mine.nonce(), challenge, mine.body(), theirs.body()))) {
			throw new ProtocolException("UCX handshake with " + remote + " failed: "
					+ (challenge == null ? "peer did not prove the shared secret" : "shared secret mismatch: the "
							+ "listener's proof does not verify"));
		}
		return theirs;
	}
}
