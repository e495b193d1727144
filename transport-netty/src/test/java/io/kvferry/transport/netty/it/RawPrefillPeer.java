package io.kvferry.transport.netty.it;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.transport.netty.internal.DialledEndpoint;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.SharedSecret;
import io.kvferry.transport.netty.internal.TransportSettings;
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
 * A fake prefill rank on 127.0.0.1 that speaks the wire protocol by hand, byte by byte, so that a test can make it do
 * what no kvferry rank would: stop talking, ignore an abort, acknowledge and keep writing, send half a payload and the
 * rest later. It completes the transport's handshake (preface and {@code AUTH} without a shared secret) and hands every
 * control message decode sends to a {@link Script}, which answers through a {@link Wire}.
 */
final class RawPrefillPeer implements AutoCloseable {

	/** What the peer does with what decode says; called on the peer's single I/O thread, in order. */
	interface Script {

		/** Decode's KV-args registration. */
		default void onHello(Wire wire, KVMessage.Hello hello) {
			wire.send(new KVMessage.HelloAck(wire.layout()));
		}

		default void onRequest(Wire wire, KVMessage.TransferRequest request) {
		}

		default void onAbort(Wire wire, KVMessage.Abort abort) {
		}

		/**
		 * @return whether the peer answers decode's heartbeats (a silent peer does not; a rogue one that must stay
		 *         connected however slow the machine makes the test does)
		 */
		default boolean answersHeartbeats() {
			return false;
		}
	}

	/** The peer's side of one connection. */
	interface Wire {

		/** @return the layout the peer announces */
		PeerLayout layout();

		/** Writes a control message; not while a data frame still owes payload bytes. */
		ChannelFuture send(KVMessage message);

		/**
		 * Writes a data frame's prefix and header; exactly {@code header.payloadLength()} payload bytes must follow,
		 * before anything else the script writes. The peer's own answers to heartbeats wait for them too.
		 */
		void header(DataHeader header);

		/**
		 * Writes {@code n} payload bytes of value {@code fill}.
		 *
		 * @return completes when written to the socket
		 */
		ChannelFuture payload(int n, byte fill);

		/** Writes a whole data frame whose payload is {@code fill} bytes. */
		default ChannelFuture data(DataHeader header, byte fill) {
			header(header);
			return payload((int) header.payloadLength(), fill);
		}
	}

	private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
	private final Channel server;
	private final PeerLayout layout;
	private final Script script;
	private final boolean handshake;
	private final Duration heartbeat;
	private final CompletableFuture<Void> disconnected = new CompletableFuture<>();

	/** A peer that announces the default heartbeat interval. */
	RawPrefillPeer(PeerLayout layout, boolean handshake, Script script) {
		this(layout, handshake, TransportSettings.DEFAULT.heartbeatInterval(), script);
	}

	/**
	 * @param layout the layout its HELLO_ACK announces
	 * @param handshake whether to answer the transport's handshake at all (false: not even the preface)
	 * @param heartbeat the heartbeat interval its AUTH announces, which decode judges its silence by
	 * @param script what it answers to decode's messages
	 */
	RawPrefillPeer(PeerLayout layout, boolean handshake, Duration heartbeat, Script script) {
		this.layout = layout;
		this.handshake = handshake;
		this.heartbeat = heartbeat;
		this.script = script;
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

	/** @return completes when a connection to the peer closed, from either side */
	CompletableFuture<Void> disconnected() {
		return disconnected;
	}

	HostPort address() {
		return new HostPort("127.0.0.1", ((InetSocketAddress) server.localAddress()).getPort());
	}

	@Override
	public void close() {
		server.close().awaitUninterruptibly(10, TimeUnit.SECONDS);
		group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
	}

	/** Frames decode's bytes (preface, then length-prefixed frames) and hands control messages to the script. */
	private final class Peer extends ByteToMessageDecoder implements Wire {

		private ChannelHandlerContext ctx;
		private boolean prefaceRead;
		// Payload bytes the data frame the script opened still owes. A frame is written whole or the stream loses its
		// boundaries: a heartbeat answered in the middle of a payload would be read as payload, and the payload's last
		// five bytes as the next frame's prefix.
		private long owed;
		// Heartbeats that came while a frame was open, answered once it is whole.
		private int heartbeatsOwed;

		@Override
		public void channelActive(ChannelHandlerContext ctx) throws Exception {
			this.ctx = ctx;
			if (handshake) {
				ctx.write(KVFrameCodec.encodePreface(ctx.alloc(), KVMessage.PROTOCOL_VERSION));
				ctx.writeAndFlush(KVFrameCodec.encodeAuth(ctx.alloc(),
						new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 16 << 20,
								(int) heartbeat.toMillis(), DialledEndpoint.NONE)));
			}
			super.channelActive(ctx);
		}

		@Override
		public void channelInactive(ChannelHandlerContext ctx) throws Exception {
			disconnected.complete(null);
			super.channelInactive(ctx);
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
				// Decode's AUTH needs no answer; a heartbeat one only if the script wants the peer to look alive.
				if (type == KVFrameCodec.TYPE_HEARTBEAT && script.answersHeartbeats()) {
					if (owed > 0) {
						heartbeatsOwed++;
					}
					else {
						ctx.writeAndFlush(KVFrameCodec.encodeHeartbeat(ctx.alloc()));
					}
				}
				else if (KVFrameCodec.isControlType(type)) {
					KVMessage message = KVFrameCodec.decode(type, body);
					if (message instanceof KVMessage.Hello hello) {
						script.onHello(this, hello);
					}
					else if (message instanceof KVMessage.TransferRequest request) {
						script.onRequest(this, request);
					}
					else if (message instanceof KVMessage.Abort abort) {
						script.onAbort(this, abort);
					}
				}
			}
		}

		@Override
		public PeerLayout layout() {
			return layout;
		}

		@Override
		public ChannelFuture send(KVMessage message) {
			requireWhole(message.getClass().getSimpleName());
			return ctx.writeAndFlush(KVFrameCodec.encode(ctx.alloc(), message, 1 << 20));
		}

		@Override
		public void header(DataHeader header) {
			requireWhole("a data header");
			ctx.write(KVFrameCodec.encodeDataHeader(ctx.alloc(), header));
			owed = header.payloadLength();
		}

		@Override
		public ChannelFuture payload(int n, byte fill) {
			if (n > owed) {
				throw new IllegalStateException(n + " payload bytes, but the open frame owes " + owed);
			}
			// One bulk write: byte by byte, paranoid leak detection records a stack trace per byte, which takes
			// seconds per MiB on a busy machine and stretches every window a test means to be short.
			byte[] bytes = new byte[n];
			Arrays.fill(bytes, fill);
			ChannelFuture written = ctx.writeAndFlush(ctx.alloc().buffer(n, n).writeBytes(bytes));
			owed -= n;
			if (owed == 0 && heartbeatsOwed > 0) {
				for (; heartbeatsOwed > 0; heartbeatsOwed--) {
					ctx.write(KVFrameCodec.encodeHeartbeat(ctx.alloc()));
				}
				ctx.flush();
			}
			return written;
		}

		private void requireWhole(String what) {
			if (owed > 0) {
				throw new IllegalStateException(what + " while the open data frame owes " + owed + " payload bytes");
			}
		}
	}
}
