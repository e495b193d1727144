package io.kvferry.registry.etcd;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.HostPort;

/**
 * A TCP relay on loopback in front of one etcd member, so that a test can cut one client off etcd while etcd stays up
 * for the others: {@link #cut()} closes every relayed connection and refuses new ones until {@link #restore()}.
 * Blocking sockets on threads of its own (two per relayed connection), never on a reactive or event-loop thread.
 */
final class TcpRelay implements AutoCloseable {

	private final ServerSocket server;
	private final HostPort target;
	private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
	private volatile boolean cut;

	private TcpRelay(HostPort target) throws IOException {
		this.target = target;
		this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
		Thread acceptor = new Thread(this::accept, "tcp-relay-" + server.getLocalPort());
		acceptor.setDaemon(true);
		acceptor.start();
	}

	/** @return a relay to {@code target}, relaying at once */
	static TcpRelay start(HostPort target) {
		try {
			return new TcpRelay(target);
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}

	/** @return where clients connect */
	HostPort address() {
		return new HostPort("127.0.0.1", server.getLocalPort());
	}

	/** Closes every relayed connection, and every one accepted from now on, until {@link #restore()}. */
	void cut() {
		cut = true;
		sockets.forEach(TcpRelay::closeQuietly);
		sockets.clear();
	}

	/** Relays new connections again. */
	void restore() {
		cut = false;
	}

	@Override
	public void close() {
		cut();
		closeQuietly(server);
	}

	private void accept() {
		while (!server.isClosed()) {
			Socket client;
			try {
				client = server.accept();
			}
			catch (IOException e) {
				return;
			}
			if (cut) {
				closeQuietly(client);
				continue;
			}
			try {
				Socket upstream = new Socket(target.host(), target.port());
				sockets.add(client);
				sockets.add(upstream);
				if (cut) {
					// Cut while this one was being connected: it must not slip through.
					closeQuietly(client);
					closeQuietly(upstream);
					continue;
				}
				pump(client, upstream);
				pump(upstream, client);
			}
			catch (IOException e) {
				closeQuietly(client);
			}
		}
	}

	private void pump(Socket from, Socket to) {
		Thread t = new Thread(() -> {
			byte[] buffer = new byte[16 * 1024];
			try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
				int n;
				while ((n = in.read(buffer)) >= 0) {
					out.write(buffer, 0, n);
				}
			}
			catch (IOException e) {
				// The other direction or cut() closed the sockets: the relayed connection is over.
			}
			finally {
				closeQuietly(from);
				closeQuietly(to);
				sockets.remove(from);
				sockets.remove(to);
			}
		}, "tcp-relay-pump");
		t.setDaemon(true);
		t.start();
	}

	private static void closeQuietly(AutoCloseable c) {
		try {
			c.close();
		}
		catch (Exception e) {
			// Closing what is already closed, or broken.
		}
	}
}
