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
 * Thread-safe: connections open and close on any event loop. Refusals are logged at WARN at most once per
 * {@value #WARN_INTERVAL_SECONDS} s, so a flood does not flood the log too.
 */
public final class ConnectionLimit {

	/** Name of the handler that answers a refused connection. */
	public static final String HANDLER = "kvferry.connectionLimit";

	static final long WARN_INTERVAL_SECONDS = 10;

	static final long LINGER_SECONDS = 2;

	private static final Logger log = LoggerFactory.getLogger(ConnectionLimit.class);

	private final int max;
	private final AtomicInteger open = new AtomicInteger();
	private final AtomicLong refused = new AtomicLong();
	private final Throttle warnings = new Throttle(Duration.ofSeconds(WARN_INTERVAL_SECONDS), System::nanoTime);
	private final byte[] answer;

	/** @param max most connections open at once, at least 1 */
	public ConnectionLimit(int max) {
		if (max < 1) {
			throw new IllegalArgumentException("maxConnections : " + max + " (expected: >= 1)");
		}
		this.max = max;
		String body = "Too many connections: this bootstrap server keeps at most " + max + " open\n";
		this.answer = ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
				+ "content-length: " + body.length() + "\r\nconnection: close\r\n\r\n" + body)
				.getBytes(StandardCharsets.US_ASCII);
	}

	/**
	 * Counts a new connection until it closes, or refuses it. Call from {@code doOnChannelInit}, once per connection,
	 * while its pipeline holds {@link NettyPipeline#HttpCodec}.
	 *
	 * @param channel the new connection
	 */
	public void admit(Channel channel) {
		if (open.incrementAndGet() <= max) {
			channel.closeFuture().addListener(f -> open.decrementAndGet());
			return;
		}
		open.decrementAndGet();
		long total = refused.incrementAndGet();
		if (warnings.tryPass()) {
			log.warn("Refusing connection from {}: {} connections open (maxConnections {}); {} refused so far",
					channel.remoteAddress(), max, max, total);
		}
		channel.pipeline().addBefore(NettyPipeline.HttpCodec, HANDLER, new Refusal());
	}

	/** @return connections counted as open now */
	public int openConnections() {
		return open.get();
	}

	/** @return connections refused so far */
	public long refusedConnections() {
		return refused.get();
	}

	/**
	 * Answers 503 below the HTTP codec (above TLS, when any), then ends its side of the connection and drops whatever
	 * the client sends until it closes too (at most {@value #LINGER_SECONDS} s): closing at once, with the client's
	 * request unread, would reset the connection and could lose the answer.
	 */
	private final class Refusal extends ChannelInboundHandlerAdapter {

		@Override
		public void handlerAdded(ChannelHandlerContext ctx) {
			Channel channel = ctx.channel();
			ctx.writeAndFlush(Unpooled.wrappedBuffer(answer)).addListener(f -> {
				if (channel instanceof DuplexChannel duplex && f.isSuccess()) {
					duplex.shutdownOutput();
					ctx.executor().schedule(() -> channel.close(), LINGER_SECONDS, TimeUnit.SECONDS);
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
