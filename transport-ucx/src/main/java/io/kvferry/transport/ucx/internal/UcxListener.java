package io.kvferry.transport.ucx.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.HandshakeSecret;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.transport.ucx.UcxDataPath;
import io.netty.util.NetUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A listener: accepts handshake connections on its own thread and hands each to the node's handshake threads, where
 * prefill's side of the handshake runs (the shared secret's challenge, then the connection opened on the loop).
 */
final class UcxListener implements KVTransport.Listener, Runnable {

	private static final Logger log = LoggerFactory.getLogger(UcxListener.class);

	private final UcxNode node;
	private final HostPort address;
	private final ServerSocketChannel server;
	private final Function<KVConnection, ConnectionHandler> acceptor;
	private final Set<UcxConnection> accepted = ConcurrentHashMap.newKeySet();
	private final AtomicBoolean closed = new AtomicBoolean();

	UcxListener(UcxNode node, HostPort address, ServerSocketChannel server,
			Function<KVConnection, ConnectionHandler> acceptor) {
		this.node = node;
		this.address = address;
		this.server = server;
		this.acceptor = acceptor;
	}

	void start() {
		Thread t = new Thread(this, "kvferry-ucx-accept-" + address.port());
		t.setDaemon(true);
		t.start();
	}

	@Override
	public void run() {
		while (!closed.get()) {
			SocketChannel s;
			try {
				s = server.accept();
			}
			catch (IOException e) {
				if (!closed.get()) {
					log.warn("UCX listener {} stopped accepting: {}", address, e.toString());
				}
				return;
			}
			node.handshakes.execute(() -> accept(s.socket()));
		}
	}

	@Override
	public HostPort address() {
		return address;
	}

	@Override
	public void dispose() {
		if (closed.compareAndSet(false, true)) {
			node.listeners.remove(this);
			try {
				server.close();
			}
			catch (IOException e) {
				log.debug("closing listener {}: {}", address, e.toString());
			}
			for (UcxConnection c : accepted) {
				node.loop.execute(() -> c.closeWith(new CloseReason(CloseReason.Kind.DISPOSED, "listener " + address
						+ " closed"), true));
			}
		}
	}

	@Override
	public boolean isDisposed() {
		return closed.get();
	}

	/** Prefill's side of a handshake, on a handshake thread. */
	private void accept(Socket socket) {
		UcxSettings settings = node.settings;
		HostPort peer = new HostPort(socket.getInetAddress().getHostAddress(), socket.getPort());
		try (socket) {
			socket.setSoTimeout((int) Math.max(1, settings.handshakeTimeout().toMillis()));
			socket.setTcpNoDelay(true);
			InputStream in = socket.getInputStream();
			OutputStream out = socket.getOutputStream();
			Handshake theirs;
			byte[] challenge;
			try {
				if (!(Handshake.read(in, peer.toString()) instanceof Handshake hello)) {
					throw new ProtocolException("UCX handshake with " + peer + " failed: it did not start with its "
							+ "hello");
				}
				theirs = hello;
				challenge = verifyPeer(theirs, socket, in, out, peer);
			}
			catch (ProtocolException e) {
				log.warn("UCX listener {} refused {}: {}", address, peer, e.getMessage());
				Handshake.refuse(out, e.getMessage());
				return;
			}
			Handshake own = node.await(node.onLoop(() -> {
				if (closed.get()) {
					throw new KVFerryException("listener " + address + " closed");
				}
				UcxConnection c = new UcxConnection(node, UcxNode.newId(), peer, true, null);
				Handshake mine = node.hello(c.id, UcxDataPath.AUTO, new byte[0], "");
				DataPaths.Choice choice = DataPaths.choose(mine, theirs, settings.dataPath());
				mine = mine.withDataPath(choice.path());
				c.open(theirs, mine, choice.path(), DataPaths.peerErrorHandling(mine, theirs));
				node.added(c);
				accepted.add(c);
				c.onClose().subscribe(null, null, () -> accepted.remove(c));
				c.handler(acceptor.apply(c));
				log.info("UCX connection {} from {} accepted: {} ({}; UCX transports {})", c.id(), peer,
						choice.path(), choice.why(), node.describeTls());
				return mine;
			}));
			HandshakeSecret secret = settings.secret();
			if (secret != null) {
				own = own.withProof(secret.proof(Handshake.LABEL, Handshake.ACCEPTING, theirs.nonce(), challenge,
						theirs.body(), own.body()));
			}
			own.write(out);
		}
		catch (IOException | RuntimeException e) {
			log.warn("UCX handshake with {} on {} failed: {}", peer, address, e.toString());
		}
	}

	/**
	 * With a shared secret: challenges the peer and checks its proof, before anything of this side is told to it. The
	 * peer's socket must have reached this socket's own address: a relay that forwards a real decode's handshake
	 * reached itself.
	 *
	 * @return the challenge's nonce (empty without a secret)
	 * @throws ProtocolException naming why the peer is refused
	 */
	private byte[] verifyPeer(Handshake theirs, Socket socket, InputStream in, OutputStream out, HostPort peer)
			throws IOException {
		HandshakeSecret secret = node.settings.secret();
		if (secret == null) {
			if (theirs.nonce().length > 0) {
				throw new ProtocolException("the peer proves a shared secret and this listener has none: configure the "
						+ "same secret on both sides");
			}
			return new byte[0];
		}
		if (theirs.nonce().length == 0) {
			throw new ProtocolException("peer did not prove the shared secret: this listener requires one and the "
					+ "peer has none");
		}
		if (!reachedThis(theirs.reached(), socket)) {
			throw new ProtocolException("dialled endpoint mismatch: the peer's socket reached " + theirs.reached()
					+ ", this listener's is " + new HostPort(socket.getLocalAddress().getHostAddress(),
							socket.getLocalPort()) + " (a relay between them?)");
		}
		byte[] nonce = secret.newNonce();
		Handshake.challenge(out, nonce);
		if (!(Handshake.read(in, peer.toString()) instanceof HandshakeStep.Proof answer)
				|| !secret.verify(answer.proof(), Handshake.LABEL, Handshake.CONNECTING, nonce, theirs.nonce(),
						theirs.body())) {
			throw new ProtocolException("shared secret mismatch: the peer's proof does not verify");
		}
		return nonce;
	}

	/** @return whether {@code reached} ({@code ip:port}) is the accepted socket's own local address */
	private static boolean reachedThis(String reached, Socket socket) {
		HostPort parsed;
		try {
			parsed = HostPort.parse(reached);
		}
		catch (IllegalArgumentException e) {
			return false;
		}
		InetAddress address = NetUtil.createInetAddressFromIpAddressString(parsed.host());
		return address != null && address.equals(socket.getLocalAddress()) && parsed.port() == socket.getLocalPort();
	}
}
