package io.kvferry.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.HostPort;

/**
 * A loopback listener that never accepts, its queue filled by connections of its own: the kernel leaves further
 * connection attempts unanswered, as a host that is down or behind a firewall that drops packets does. For tests of
 * connect timeouts over real sockets. Close it to close everything.
 */
public final class DeafListener implements AutoCloseable {

	// How long a connection of its own may wait to be queued: past it, the queue is full.
	private static final int QUEUED_WITHIN_MILLIS = 200;
	private static final int MAX_QUEUED = 8;

	private final ServerSocket socket;
	private final List<Socket> queued = new ArrayList<>();

	private DeafListener(ServerSocket socket) {
		this.socket = socket;
	}

	/** @return a listener on a free loopback port whose queue is full */
	public static DeafListener open() {
		try {
			ServerSocket socket = new ServerSocket();
			DeafListener deaf = new DeafListener(socket);
			try {
				socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
				for (int i = 0; i < MAX_QUEUED; i++) {
					Socket s = new Socket();
					deaf.queued.add(s);
					try {
						s.connect(socket.getLocalSocketAddress(), QUEUED_WITHIN_MILLIS);
					}
					catch (SocketTimeoutException full) {
						return deaf;
					}
				}
				throw new IllegalStateException("the listen queue of " + socket + " never filled: the kernel accepts "
						+ "more than " + MAX_QUEUED + " connections on a backlog of 1");
			}
			catch (IOException | RuntimeException e) {
				deaf.close();
				throw e;
			}
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}

	/** @return where it listens */
	public HostPort address() {
		return new HostPort("127.0.0.1", socket.getLocalPort());
	}

	@Override
	public void close() {
		for (Socket s : queued) {
			try {
				s.close();
			}
			catch (IOException e) {
				// Closing a test's socket: nothing to do about it.
			}
		}
		try {
			socket.close();
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}
}
