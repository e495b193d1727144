package io.kvferry.transport.netty;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

import io.kvferry.HostPort;
import io.kvferry.transport.netty.internal.DialledEndpoint;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

/**
 * A party without the shared secret that a decode rank was made to dial (a registry entry pointing at it): a plain TCP
 * relay on 127.0.0.1 that forwards every byte both ways to a real listener, so that the two ends run their handshake
 * through it. Optionally it rewrites the endpoint the connecting side announces in its {@code AUTH} frame (to the
 * listener's own address, say) and forwards everything else unchanged. One event loop thread of its own; its buffers
 * come from an unpooled allocator so that they never count as the pooled allocator's.
 */
final class HandshakeRelay implements AutoCloseable {

	private static final ByteBufAllocator ALLOCATOR = new UnpooledByteBufAllocator(false);

	private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
	private final Channel server;
	private final UnaryOperator<DialledEndpoint> rewrite;
	private final AtomicInteger rewritten = new AtomicInteger();
	private volatile HostPort target;

	private HandshakeRelay(UnaryOperator<DialledEndpoint> rewrite) {
		this.rewrite = rewrite;
		this.server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
				.childOption(ChannelOption.AUTO_READ, false)
				.childOption(ChannelOption.ALLOCATOR, ALLOCATOR)
				.childHandler(new ChannelInitializer<Channel>() {
					@Override
					protected void initChannel(Channel ch) {
						relay(ch);
					}
				})
				.bind("127.0.0.1", 0).syncUninterruptibly().channel();
	}

	/** @return a relay that forwards bytes unchanged (give it a {@link #target} before anyone dials it) */
	static HandshakeRelay forwarding() {
		return new HandshakeRelay(null);
	}

	/** @return a relay that replaces the connecting side's announcement with {@code rewrite}'s result */
	static HandshakeRelay rewriting(UnaryOperator<DialledEndpoint> rewrite) {
		return new HandshakeRelay(rewrite);
	}

	/** Sets where connections are relayed to. */
	HandshakeRelay target(HostPort target) {
		this.target = target;
		return this;
	}

	/** @return the address decode is made to dial */
	HostPort address() {
		return new HostPort("127.0.0.1", ((InetSocketAddress) server.localAddress()).getPort());
	}

	/** @return how many {@code AUTH} frames were rewritten */
	int rewritten() {
		return rewritten.get();
	}

	@Override
	public void close() {
		server.close().syncUninterruptibly();
		group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
	}

	private void relay(Channel client) {
		HostPort to = target;
		ChannelFuture connecting = new Bootstrap().group(client.eventLoop()).channel(NioSocketChannel.class)
				.option(ChannelOption.ALLOCATOR, ALLOCATOR)
				.handler(new Forward(client))
				.connect(to.host(), to.port());
		connecting.addListener((ChannelFuture f) -> {
			if (!f.isSuccess()) {
				client.close();
				return;
			}
			client.pipeline().addLast(rewrite != null ? new RewriteAuth(f.channel()) : new Forward(f.channel()));
			client.config().setAutoRead(true);
		});
	}

	/** Writes what one side reads to the other, and closes the other once the bytes before the close are out. */
	private static class Forward extends ChannelInboundHandlerAdapter {

		final Channel peer;

		Forward(Channel peer) {
			this.peer = peer;
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			peer.writeAndFlush(msg);
		}

		@Override
		public void channelInactive(ChannelHandlerContext ctx) {
			peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
		}

		@Override
		public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
			ctx.close();
		}
	}

	/**
	 * Client to listener: holds the preface and the first frame (the connecting side's {@code AUTH}) until they are
	 * complete, forwards them with the announcement rewritten, then forwards everything as it comes.
	 */
	private final class RewriteAuth extends Forward {

		private ByteBuf head = Unpooled.buffer();

		RewriteAuth(Channel peer) {
			super(peer);
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			if (head == null) {
				super.channelRead(ctx, msg);
				return;
			}
			ByteBuf in = (ByteBuf) msg;
			try {
				head.writeBytes(in);
			}
			finally {
				in.release();
			}
			int prefix = KVFrameCodec.PREFACE_LENGTH + KVFrameCodec.FRAME_PREFIX_LENGTH;
			int preface = KVFrameCodec.PREFACE_LENGTH;
			if (head.readableBytes() < prefix || head.readableBytes() < preface + 4 + head.getInt(preface)) {
				return;
			}
			ByteBuf stream = head;
			head = null;
			try {
				peer.write(stream.readRetainedSlice(KVFrameCodec.PREFACE_LENGTH));
				int body = stream.readInt() - 1;
				stream.skipBytes(1);
				KVFrameCodec.Auth auth = KVFrameCodec.decodeAuth(stream.readSlice(body));
				peer.write(KVFrameCodec.encodeAuth(ALLOCATOR, new KVFrameCodec.Auth(auth.hasSecret(), auth.nonce(),
						auth.maxFrameLength(), rewrite.apply(auth.dialled()))));
				rewritten.incrementAndGet();
				peer.writeAndFlush(stream.readRetainedSlice(stream.readableBytes()));
			}
			finally {
				stream.release();
			}
		}

		@Override
		public void handlerRemoved(ChannelHandlerContext ctx) {
			if (head != null) {
				head.release();
				head = null;
			}
		}
	}
}
