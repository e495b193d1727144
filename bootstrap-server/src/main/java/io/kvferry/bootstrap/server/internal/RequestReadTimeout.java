package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.LastHttpContent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.netty.NettyPipeline;

/**
 * Bounds the time from the first byte of a request to its last, headers and body together. Reactor Netty's idle timeout
 * does not (every byte resets it, so a client trickling one byte at a time is never idle), nor does its request timeout
 * (it starts once the headers are in). When the time is up the connection gets a bare {@code 408 Request Timeout} and
 * is closed; a handler still waiting for the body then sees the connection close.
 * <p>
 * Two handlers share one state per connection: one before the HTTP codec sees raw bytes (after TLS, when any) and arms
 * the timer at the first byte of a request; one after the codec disarms it when the request's last content is decoded,
 * so the next byte arms it again (one scheduled check per connection serves every request on it). Time between requests is left to the idle timeout. Both run on the connection's
 * event loop only, so the state needs no synchronization; nothing blocks. Messages are passed on untouched; the 408
 * buffer is released by the transport once written.
 */
public final class RequestReadTimeout {

	/** Name of the handler before the HTTP codec. */
	public static final String BYTES_HANDLER = "kvferry.requestReadTimeout.bytes";

	/** Name of the handler after the HTTP codec. */
	public static final String MESSAGES_HANDLER = "kvferry.requestReadTimeout.messages";

	private static final Logger log = LoggerFactory.getLogger(RequestReadTimeout.class);

	private static final byte[] REQUEST_TIMEOUT = ("HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n"
			+ "connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);

	private final long timeoutNanos;
	/** True between the end of a request and the first byte of the next: the next byte arms the timer. */
	private boolean awaitingRequest = true;
	/** When the request being read must be in, by the event loop's ticker; meaningful while not awaiting one. */
	private long deadline;
	/**
	 * The scheduled check, kept across requests: a kept-alive connection answering many requests a second would
	 * otherwise add one timer to the event loop's queue and cancel it again per request. When it fires it looks at the
	 * request being read, if any, and waits again for what is left of that request's time.
	 */
	private ScheduledFuture<?> timer;

	private RequestReadTimeout(Duration timeout) {
		this.timeoutNanos = timeout.toNanos();
	}

	/**
	 * Adds the two handlers around Reactor Netty's HTTP codec. Call from {@code doOnChannelInit}, once per connection.
	 *
	 * @param pipeline a new connection's pipeline, already holding {@link NettyPipeline#HttpCodec}
	 * @param timeout the longest time a request may take to arrive, positive
	 */
	public static void install(ChannelPipeline pipeline, Duration timeout) {
		Objects.requireNonNull(pipeline, "pipeline");
		Objects.requireNonNull(timeout, "timeout");
		if (timeout.isNegative() || timeout.isZero()) {
			throw new IllegalArgumentException("timeout : " + timeout + " (expected: > 0)");
		}
		if (pipeline.get(NettyPipeline.HttpCodec) == null) {
			throw new IllegalStateException("no " + NettyPipeline.HttpCodec + " in " + pipeline.names());
		}
		RequestReadTimeout state = new RequestReadTimeout(timeout);
		pipeline.addBefore(NettyPipeline.HttpCodec, BYTES_HANDLER, state.new BytesWatcher());
		pipeline.addAfter(NettyPipeline.HttpCodec, MESSAGES_HANDLER, state.new MessagesWatcher());
	}

	/**
	 * @param pipeline a pipeline {@link #install} was given
	 * @return the check scheduled for its connection, or null when none is
	 */
	static ScheduledFuture<?> scheduledCheck(ChannelPipeline pipeline) {
		return ((BytesWatcher) pipeline.get(BYTES_HANDLER)).state().timer;
	}

	private void arm(ChannelHandlerContext ctx) {
		awaitingRequest = false;
		deadline = ctx.executor().ticker().nanoTime() + timeoutNanos;
		if (timer == null) {
			schedule(ctx, timeoutNanos);
		}
	}

	private void schedule(ChannelHandlerContext ctx, long delayNanos) {
		timer = ctx.executor().schedule(() -> check(ctx), delayNanos, TimeUnit.NANOSECONDS);
	}

	/** The connection closed: nothing is left to time. */
	private void cancel() {
		if (timer != null) {
			timer.cancel(false);
			timer = null;
		}
	}

	private void check(ChannelHandlerContext ctx) {
		timer = null;
		if (awaitingRequest || !ctx.channel().isActive()) {
			// No request is being read: the next one's first byte schedules a check again.
			return;
		}
		long left = deadline - ctx.executor().ticker().nanoTime();
		if (left > 0) {
			schedule(ctx, left);
			return;
		}
		log.debug("{}: request not received within {} ms, closing", ctx.channel(),
				TimeUnit.NANOSECONDS.toMillis(timeoutNanos));
		// Written below the codec (above TLS), after any answer already written: the connection ends here.
		ctx.writeAndFlush(Unpooled.wrappedBuffer(REQUEST_TIMEOUT)).addListener(ChannelFutureListener.CLOSE);
	}

	/** Sees the raw bytes: the first byte of a request arms the timer. */
	private final class BytesWatcher extends ChannelInboundHandlerAdapter {

		RequestReadTimeout state() {
			return RequestReadTimeout.this;
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			if (awaitingRequest && msg instanceof ByteBuf bytes && bytes.isReadable()) {
				arm(ctx);
			}
			ctx.fireChannelRead(msg);
		}

		@Override
		public void channelInactive(ChannelHandlerContext ctx) {
			cancel();
			ctx.fireChannelInactive();
		}
	}

	/** Sees decoded HTTP objects: the end of a request disarms the timer and lets the next byte arm it. */
	private final class MessagesWatcher extends ChannelInboundHandlerAdapter {

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			if (msg instanceof LastHttpContent) {
				awaitingRequest = true;
			}
			ctx.fireChannelRead(msg);
		}
	}
}
