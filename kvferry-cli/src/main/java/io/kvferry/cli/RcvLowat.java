package io.kvferry.cli;

import java.io.IOException;
import java.lang.reflect.Method;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;

import io.netty.channel.epoll.Epoll;
import io.netty.channel.unix.Socket;

/**
 * {@code SO_RCVLOWAT} on a JDK socket channel, for the bench's strongest simple pump: a reader that asks the
 * kernel to wake it only once a large slice has arrived makes fewer, larger reads. The JDK has no such option, so this
 * takes the channel's file descriptor (needs {@code --add-exports java.base/sun.nio.ch=ALL-UNNAMED}, which the
 * launcher's jar manifest carries) and sets it through Netty's native epoll library (Linux only).
 */
final class RcvLowat {

	private static final int SOL_SOCKET = 1;
	private static final int SO_RCVLOWAT = 18;
	private static final Method FD_VAL;
	private static final String UNAVAILABLE;

	static {
		Method fdVal = null;
		String why = null;
		if (!Epoll.isAvailable()) {
			why = "no native epoll: " + Epoll.unavailabilityCause();
		}
		else {
			try {
				fdVal = Class.forName("sun.nio.ch.SelChImpl").getMethod("getFDVal");
			}
			catch (ReflectiveOperationException | RuntimeException e) {
				why = "no file descriptor of a JDK channel (" + e + ")";
			}
		}
		FD_VAL = fdVal;
		UNAVAILABLE = why;
	}

	private final Socket socket;
	private final SocketChannel channel;
	private int current = 1;

	private RcvLowat(SocketChannel channel, Socket socket) {
		this.channel = channel;
		this.socket = socket;
	}

	/** @return null when {@link #of} works here, else why not */
	static String unavailable() {
		return UNAVAILABLE;
	}

	/** @throws IOException when unavailable here (see {@link #unavailable()}) or the descriptor cannot be read */
	static RcvLowat of(SocketChannel channel) throws IOException {
		if (UNAVAILABLE != null) {
			throw new IOException("SO_RCVLOWAT unavailable: " + UNAVAILABLE);
		}
		try {
			// Wraps, does not own: the descriptor is closed with the channel.
			return new RcvLowat(channel, new Socket((Integer) FD_VAL.invoke(channel)));
		}
		catch (ReflectiveOperationException | RuntimeException e) {
			throw new IOException("SO_RCVLOWAT unavailable: no file descriptor of " + channel + " (" + e + ")", e);
		}
	}

	/**
	 * Sets the low-water mark to {@code wanted}, capped at half the current receive buffer (which grows as the
	 * connection warms up): a mark the buffer cannot reach leaves a reader waiting for the kernel's
	 * memory-pressure wake-ups, or for good on kernels without them.
	 */
	void set(int wanted) throws IOException {
		int cap = Math.max(1, channel.getOption(StandardSocketOptions.SO_RCVBUF) / 2);
		int mark = Math.max(1, Math.min(wanted, cap));
		if (mark != current) {
			socket.setIntOpt(SOL_SOCKET, SO_RCVLOWAT, mark);
			current = mark;
		}
	}

	/** @return the mark the kernel holds now */
	int get() throws IOException {
		return socket.getIntOpt(SOL_SOCKET, SO_RCVLOWAT);
	}
}
