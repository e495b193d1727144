package io.kvferry.transport.netty.internal;

import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.SocketChannelConfig;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.channel.unix.UnixChannel;

/**
 * The socket's {@code SO_RCVLOWAT} while a large payload lands straight into registered memory: the kernel then wakes
 * the event loop only once that many bytes wait, so each read moves about a megabyte instead of whatever arrived since
 * the last wake-up (fewer reads, fewer epoll wake-ups, fewer sleeps; the sender's segments are acknowledged in larger
 * batches).
 *
 * <p>It can never hold a read back for good: the mark is at most the payload bytes still to come (the peer sends every
 * byte of a frame it started, or closes, which wakes the loop anyway), at most half the receive buffer (so the window
 * the receiver advertises can always hold it) and is back to 1 before anything else is expected (headers, control
 * frames). On the native transports, Epoll and io_uring (NIO has no such option): io_uring's reads wait on the same
 * socket readiness, so the mark spares them as many completions as it spares Epoll wake-ups. Never under TLS, where
 * the socket holds records, not payload.
 *
 * <p>One instance per channel, used on its event loop; a set is a {@code setsockopt} only when the value changes.
 */
final class ReceiveLowWater {

	/** {@code SO_RCVLOWAT}: level {@code SOL_SOCKET} (1), option 18 on Linux; Netty 4.2 has no constant for it. */
	static final ChannelOption<Integer> SO_RCVLOWAT = new IntegerUnixChannelOption("SO_RCVLOWAT", 1, 18);

	/** Largest mark: a read of about a megabyte already costs far less than the bytes it moves. */
	static final int MAX = 1 << 20;
	private static final Integer MAX_BOXED = MAX;

	private final SocketChannelConfig config;
	private int current = 1;

	private ReceiveLowWater(SocketChannelConfig config) {
		this.config = config;
	}

	/** @return a low-water mark for {@code channel}, or {@code null} when its transport has none (NIO) */
	static ReceiveLowWater of(Channel channel) {
		// A Unix socket channel is Epoll's or io_uring's; naming neither class keeps io_uring's jar optional.
		return channel instanceof UnixChannel && channel instanceof SocketChannel s ? new ReceiveLowWater(s.config())
				: null;
	}

	/**
	 * Sets the mark for the next wake-up.
	 *
	 * @param payloadBytes payload bytes certainly still to come that the next read will land directly, or 0 when the
	 *        next bytes may be anything
	 */
	void expect(long payloadBytes) {
		int mark = 1;
		if (payloadBytes > 1) {
			// Read back on every raise: the kernel grows an auto-tuned receive buffer as the connection speeds up.
			mark = (int) Math.min(Math.min(MAX, payloadBytes), config.getReceiveBufferSize() / 2);
			mark = Math.max(mark, 1);
		}
		if (mark != current) {
			// The common marks boxed once: a payload of megabytes raises the mark to MAX and drops it to 1 again.
			config.setOption(SO_RCVLOWAT, mark == MAX ? MAX_BOXED : Integer.valueOf(mark));
			current = mark;
		}
	}

	/** @return the mark last set (for tests) */
	int current() {
		return current;
	}
}
