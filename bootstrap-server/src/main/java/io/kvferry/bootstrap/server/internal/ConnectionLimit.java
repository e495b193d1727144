package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.DuplexChannel;
import io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.netty.NettyPipeline;

/**
 * Caps a server's open connections, so that a flood of clients cannot take the process's file descriptors: a
 * connection over the cap gets a bare {@code 503} naming the cap and is closed; those already open keep working.
 * <p>
 * A refused connection that is answered stays open a little while ({@link #LINGER} at most, see {@link Refusal}), and
 * so holds a socket too: at most {@code maxLingering} of them at once. Beyond those, a refused connection is closed at
 * once without an answer. The server therefore holds at most {@code max + maxLingering} sockets, whatever the flood.
 * <p>
 * Thread-safe: connections open and close on any event loop; neither count ever passes its cap
 * ({@link BoundedCount}). Refusals are logged at WARN at most once per
 * {@value #WARN_INTERVAL_SECONDS} s, so a flood does not flood the log too.
 */
public final class ConnectionLimit {

	/** Name of the handler that answers a refused connection. */
	public static final String HANDLER = "kvferry.connectionLimit";

	/** Longest time an answered refused connection stays open, waiting for the client to close first. */
	public static final Duration LINGER = Duration.ofSeconds(2);

	static final long WARN_INTERVAL_SECONDS = 10;

	private static final Logger log = LoggerFactory.getLogger(ConnectionLimit.class);

	private final BoundedCount open;
	private final BoundedCount lingering;
	/** Sockets kept open (admitted or lingering) until they close, counted apart from the caps they should obey. */
	private final AtomicInteger sockets = new AtomicInteger();
	private final AtomicInteger peakSockets = new AtomicInteger();
	private final AtomicLong refused = new AtomicLong();
	private final AtomicLong closedAtOnce = new AtomicLong();
	private final Throttle warnings = new Throttle(Duration.ofSeconds(WARN_INTERVAL_SECONDS), System::nanoTime);
	private final byte[] answer;

	/**
	 * @param max most connections open at once, at least 1
	 * @param maxLingering most refused connections kept open at once to deliver their {@code 503}, at least 0
	 */
	public ConnectionLimit(int max, int maxLingering) {
		if (max < 1) {
			throw new IllegalArgumentException("maxConnections : " + max + " (expected: >= 1)");
		}
		if (maxLingering < 0) {
			throw new IllegalArgumentException("maxLingeringRefusals : " + maxLingering + " (expected: >= 0)");
		}
		this.open = new BoundedCount(max);
		this.lingering = new BoundedCount(maxLingering);
		String body = "Too many connections: this bootstrap server keeps at most " + max + " open\n";
		this.answer = ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
				+ "content-length: " + body.length() + "\r\nconnection: close\r\n\r\n" + body)
				.getBytes(StandardCharsets.US_ASCII);
	}

	/**
	 * Counts a new connection until it closes, or refuses it: with a {@code 503} while the lingering budget lasts,
	 * else by closing it at once. Call from {@code doOnChannelInit}, once per connection, while its pipeline holds
	 * {@link NettyPipeline#HttpCodec}.
	 *
	 * @param channel the new connection
	 */
	public void admit(Channel channel) {
		if (open.tryTake()) {
			keep(channel);
			channel.closeFuture().addListener(f -> open.release());
			return;
		}
		long total = refused.incrementAndGet();
		if (lingering.tryTake()) {
			keep(channel);
			channel.closeFuture().addListener(f -> lingering.release());
			channel.pipeline().addBefore(NettyPipeline.HttpCodec, HANDLER, new Refusal());
		}
		else {
			closedAtOnce.incrementAndGet();
			channel.close();
		}
		if (warnings.tryPass()) {
			log.warn("Refusing connection from {}: {} connections open (maxConnections {}); {} refused so far, {} of "
					+ "them closed without an answer because {} refused connections were still being answered "
					+ "(maxLingeringRefusals)", channel.remoteAddress(), open.cap(), open.cap(), total,
					closedAtOnce.get(), lingering.cap());
		}
	}

	/** @return connections counted as open now */
	public int openConnections() {
		return open.taken();
	}

	/** @return refused connections still open now, delivering their {@code 503} */
	public int lingeringRefusals() {
		return lingering.taken();
	}

	/** @return the most sockets this server kept open at once so far, open and lingering refused ones together */
	public int peakSockets() {
		return peakSockets.get();
	}

	/** @return connections refused so far, answered or not */
	public long refusedConnections() {
		return refused.get();
	}

	/** @return refused connections closed at once, without an answer, because the lingering budget was spent */
	public long closedWithoutAnswer() {
		return closedAtOnce.get();
	}

	/** @return refused connections answered {@code 503} so far */
	public long answeredRefusals() {
		return refused.get() - closedAtOnce.get();
	}

	private void keep(Channel channel) {
		peakSockets.accumulateAndGet(sockets.incrementAndGet(), Math::max);
		channel.closeFuture().addListener(f -> sockets.decrementAndGet());
	}

	/**
	 * Answers 503 below the HTTP codec (above TLS, when any), then ends its side of the connection and drops whatever
	 * the client sends until it closes too (at most {@link #LINGER}): closing at once, with the client's request
	 * unread, would reset the connection and could lose the answer.
	 */
	private final class Refusal extends ChannelInboundHandlerAdapter {

		@Override
		public void handlerAdded(ChannelHandlerContext ctx) {
			Channel channel = ctx.channel();
			ctx.writeAndFlush(Unpooled.wrappedBuffer(answer)).addListener(f -> {
				if (channel instanceof DuplexChannel duplex && f.isSuccess()) {
					duplex.shutdownOutput();
					ctx.executor().schedule(() -> channel.close(), LINGER.toMillis(), TimeUnit.MILLISECONDS);
				}
				else {
					channel.close();
				}
			});
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			ReferenceCountUtil.release(msg);
		}
	}
}
