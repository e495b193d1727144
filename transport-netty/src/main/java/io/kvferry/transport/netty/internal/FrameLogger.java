package io.kvferry.transport.netty.internal;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs every frame of one connection, both directions, at DEBUG on the logger {@value #CATEGORY}: its direction, type,
 * stripe, room and lengths, never payload bytes, session tokens or handshake secrets. The first thing to turn on when
 * two sides disagree about what was sent.
 *
 * <pre>
 * [3f2a9c1e] open L:/10.0.0.7:41022 - R:/10.0.0.5:8998
 * [3f2a9c1e] OUT PREFACE version=10
 * [3f2a9c1e] OUT HELLO stripe=0 length=201
 * [3f2a9c1e] OUT TRANSFER_REQUEST stripe=0 room=42 length=102
 * [3f2a9c1e] IN DATA stripe=0 room=42 kind=KV region=3 offset=1048576 chunk=4096x16 payload=65536 length=65574
 * [3f2a9c1e] IN STATUS stripe=0 room=42 length=40
 * </pre>
 * The bracketed id is the connection's, as the transport's other log lines name it. {@code length} is the frame's
 * length field (type and body; the frame takes 4 more bytes on the wire); a data frame's {@code payload} is what its
 * header announces. Frames are described as the bytes pass this handler, which sits right after TLS (it sees plain
 * frames) and before the idle handler and the decoder: what a peer sent is logged before the decoder judges it.
 *
 * <p>Costs nothing when off: {@link #install} adds it to a channel only when the logger is at DEBUG as the channel is
 * set up, so a connection opened while it is off never has it (and one opened while it is on keeps it). On, it reads
 * only frame prefixes and the few header bytes that name a room ({@link FrameScanner}); it neither keeps nor releases
 * the buffers it sees, and hands each on unchanged. Its lines are logged on the event loop: an operator who turns it on
 * under load sends the category to an appender that does not wait (see docs/configuration.md).
 */
final class FrameLogger extends ChannelDuplexHandler {

	/** The logger category; DEBUG turns frame logging on for connections opened from then on. */
	static final String CATEGORY = "io.kvferry.frames";

	private static final Logger log = LoggerFactory.getLogger(CATEGORY);

	/** Its name in a channel's pipeline. */
	static final String NAME = "kvferry.frames";

	private final String id;
	private final FrameScanner.Stripe stripe = new FrameScanner.Stripe();
	private final FrameScanner inbound = new FrameScanner("IN", stripe);
	private final FrameScanner outbound = new FrameScanner("OUT", stripe);
	private final FrameScanner.Lines lines = this::line;

	private FrameLogger(String id) {
		this.id = id;
	}

	/**
	 * Adds a frame logger as the channel's next handler when {@value #CATEGORY} is at DEBUG; does nothing otherwise.
	 *
	 * @param channel a channel being set up, its handlers added in order (TLS, if any, already)
	 * @param id the connection's id
	 */
	static void install(Channel channel, String id) {
		if (log.isDebugEnabled()) {
			channel.pipeline().addLast(NAME, new FrameLogger(id));
		}
	}

	@Override
	public void channelActive(ChannelHandlerContext ctx) {
		log.debug("[{}] open L:{} - R:{}", id, ctx.channel().localAddress(), ctx.channel().remoteAddress());
		ctx.fireChannelActive();
	}

	@Override
	public void channelRead(ChannelHandlerContext ctx, Object msg) {
		if (msg instanceof ByteBuf buf) {
			inbound.scan(buf, lines);
		}
		ctx.fireChannelRead(msg);
	}

	@Override
	public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
		if (msg instanceof ByteBuf buf) {
			outbound.scan(buf, lines);
		}
		ctx.write(msg, promise);
	}

	@Override
	public void channelInactive(ChannelHandlerContext ctx) {
		log.debug("[{}] closed", id);
		ctx.fireChannelInactive();
	}

	private void line(String direction, String description) {
		log.debug("[{}] {} {}", id, direction, description);
	}
}
