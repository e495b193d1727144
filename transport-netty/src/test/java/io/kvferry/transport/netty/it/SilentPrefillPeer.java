package io.kvferry.transport.netty.it;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.HostPort;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.SharedSecret;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;

/**
 * A fake prefill rank on 127.0.0.1 that speaks just enough of the wire protocol to get a decode rank talking, then
 * goes silent: no heartbeat, no answer, while it keeps reading (so TCP itself stays healthy and only the transport's
 * heartbeat can notice).
 *
 * <p>{@link Mode#AFTER_PREFACE} completes the transport's handshake (the 6-byte preface and an {@code AUTH} frame
 * without a shared secret) and says nothing more, so the engine's handshake (HELLO) is never answered.
 * {@link Mode#AFTER_FIRST_BLOCK} answers HELLO, and on the first TRANSFER_REQUEST writes one page of the room's first
 * destination (so decode is in Transferring) and then falls silent. {@link #silentSinceNanos()} is when its last
 * bytes were written.
 */
final class SilentPrefillPeer implements AutoCloseable {

	/** When the peer stops talking. */
	enum Mode {
		AFTER_PREFACE, AFTER_FIRST_BLOCK
	}

	private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
	private final Channel server;
	private final Mode mode;
	private final PeerLayout layout;
	private final AtomicLong silentSince = new AtomicLong();

	/**
	 * @param mode when to fall silent
	 * @param layout the layout its HELLO_ACK announces
	 */
	SilentPrefillPeer(Mode mode, PeerLayout layout) {
		this.mode = mode;
		this.layout = layout;
		this.server = new ServerBootstrap()
				.group(group)
				.channel(NioServerSocketChannel.class)
				.childOption(ChannelOption.TCP_NODELAY, true)
				.childHandler(new ChannelInitializer<Channel>() {
					@Override
					protected void initChannel(Channel ch) {
						ch.pipeline().addLast(new Peer());
					}
				})
				.bind("127.0.0.1", 0)
				.syncUninterruptibly()
				.channel();
	}

	HostPort address() {
		return new HostPort("127.0.0.1", ((InetSocketAddress) server.localAddress()).getPort());
	}

	/** @return {@link System#nanoTime()} when the last bytes it will ever write were written, or 0 before that */
	long silentSinceNanos() {
		return silentSince.get();
	}

	@Override
	public void close() {
		server.close().awaitUninterruptibly(10, TimeUnit.SECONDS);
		group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
	}

	/** Frames the decode side's bytes (preface, then length-prefixed frames) and answers as its mode says. */
	private final class Peer extends ByteToMessageDecoder {

		private boolean prefaceRead;
		private boolean silent;

		@Override
		public void channelActive(ChannelHandlerContext ctx) throws Exception {
			// The transport's handshake: preface, then AUTH without a shared secret (nonce all zeros).
			ctx.write(KVFrameCodec.encodePreface(ctx.alloc(), KVMessage.PROTOCOL_VERSION));
			ChannelFuture written = ctx.writeAndFlush(KVFrameCodec.encodeAuth(ctx.alloc(),
					new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 16 << 20)));
			if (mode == Mode.AFTER_PREFACE) {
				silent = true;
				written.addListener(f -> silentSince.set(System.nanoTime()));
			}
			super.channelActive(ctx);
		}

		@Override
		protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
			if (!prefaceRead) {
				if (in.readableBytes() < KVFrameCodec.PREFACE_LENGTH) {
					return;
				}
				in.skipBytes(KVFrameCodec.PREFACE_LENGTH);
				prefaceRead = true;
			}
			while (in.readableBytes() >= KVFrameCodec.FRAME_PREFIX_LENGTH) {
				int length = in.getInt(in.readerIndex());
				if (in.readableBytes() < 4 + length) {
					return;
				}
				in.skipBytes(4);
				int type = in.readUnsignedByte();
				ByteBuf body = in.readSlice(length - 1);
				// The decode side's AUTH and heartbeats need no answer.
				if (!silent && KVFrameCodec.isControlType(type)) {
					answer(ctx, KVFrameCodec.decode(type, body));
				}
			}
		}

		private void answer(ChannelHandlerContext ctx, KVMessage message) {
			if (message instanceof KVMessage.Hello) {
				ctx.writeAndFlush(KVFrameCodec.encode(ctx.alloc(), new KVMessage.HelloAck(layout), 1 << 20));
			}
			else if (message instanceof KVMessage.TransferRequest req && req.dstPages().length > 0) {
				// One page of the first K buffer at the room's first destination page, then nothing ever again.
				int itemLen = layout.kv().get(0).itemLen();
				DataHeader header = new DataHeader(req.room(), RegionKind.KV, 0, (long) req.dstPages()[0] * itemLen,
						itemLen, itemLen, 1);
				ctx.write(KVFrameCodec.encodeDataHeader(ctx.alloc(), header));
				ByteBuf payload = ctx.alloc().buffer(itemLen);
				payload.writeZero(itemLen);
				silent = true;
				ctx.writeAndFlush(payload).addListener(f -> silentSince.set(System.nanoTime()));
			}
		}
	}
}
