package io.kvferry.transport.netty.it;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.KVPoll;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.test.rogue.Forgery;
import io.kvferry.test.rogue.RogueLink;
import io.kvferry.test.rogue.RoguePrefillPeer;
import io.kvferry.transport.netty.internal.DialledEndpoint;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.transport.netty.internal.SharedSecret;
import io.kvferry.transport.netty.internal.frame.ScatterCodec;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.internal.PlatformDependent;

/**
 * A rogue prefill rank over TCP, byte by byte: it completes the transport's handshake (preface and {@code AUTH}
 * without a shared secret, announcing a heartbeat interval), answers decode's heartbeats until told to go silent, hands
 * every control message to its {@link RoguePrefillPeer}, and writes any frame a test tells it to, malformed ones
 * included ({@link Forgery}).
 */
final class RawRogue implements KVTransport.Listener {

	private static final int MAX_FRAME = 1 << 20;

	private final Channel server;
	private final RoguePrefillPeer peer;
	private final PeerLayout layout;
	private final Duration heartbeat;

	/**
	 * @param group the event loops it runs on (shared, not shut down here)
	 * @param heartbeat the interval its {@code AUTH} announces, which decode judges its silence by
	 */
	RawRogue(EventLoopGroup group, RoguePrefillPeer peer, Duration heartbeat) {
		this.peer = peer;
		// A forged handshake starts from the honest one.
		this.layout = peer.layout();
		this.heartbeat = heartbeat;
		this.server = new ServerBootstrap()
				.group(group)
				.channel(NioServerSocketChannel.class)
				.childOption(ChannelOption.TCP_NODELAY, true)
				.childHandler(new ChannelInitializer<Channel>() {
					@Override
					protected void initChannel(Channel ch) {
						ch.pipeline().addLast(new Link());
					}
				})
				.bind("127.0.0.1", 0)
				.syncUninterruptibly()
				.channel();
	}

	@Override
	public HostPort address() {
		return new HostPort("127.0.0.1", ((InetSocketAddress) server.localAddress()).getPort());
	}

	@Override
	public void dispose() {
		server.close().awaitUninterruptibly(10, TimeUnit.SECONDS);
	}

	@Override
	public boolean isDisposed() {
		return !server.isOpen();
	}

	/** One accepted connection: it frames decode's bytes and is the peer's link. */
	private final class Link extends ByteToMessageDecoder implements RogueLink {

		private volatile Channel channel;
		private volatile boolean silent;
		private boolean prefaceRead;

		@Override
		public void channelActive(ChannelHandlerContext ctx) throws Exception {
			channel = ctx.channel();
			ctx.write(KVFrameCodec.encodePreface(ctx.alloc(), KVMessage.PROTOCOL_VERSION));
			ctx.writeAndFlush(KVFrameCodec.encodeAuth(ctx.alloc(), new KVFrameCodec.Auth(false,
					new byte[SharedSecret.NONCE_LENGTH], MAX_FRAME, (int) heartbeat.toMillis(), DialledEndpoint.NONE)));
			peer.accepted(this);
			super.channelActive(ctx);
		}

		@Override
		public void channelInactive(ChannelHandlerContext ctx) throws Exception {
			peer.closed(this);
			super.channelInactive(ctx);
		}

		@Override
		public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
			ctx.close();
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
				if (type == KVFrameCodec.TYPE_HEARTBEAT) {
					if (!silent) {
						ctx.writeAndFlush(KVFrameCodec.encodeHeartbeat(ctx.alloc()));
					}
				}
				else if (KVFrameCodec.isControlType(type)) {
					peer.received(this, KVFrameCodec.decode(type, body));
				}
			}
		}

		@Override
		public String id() {
			Channel c = channel;
			return "raw rogue connection " + (c == null ? "?" : c.remoteAddress());
		}

		@Override
		public void send(KVMessage message) {
			write(KVFrameCodec.encode(channel.alloc(), message, MAX_FRAME));
		}

		@Override
		public void data(DataHeader header, long srcAddress, long srcStride) {
			ByteBuf frame = channel.alloc().buffer();
			frame.writeInt((int) (1 + KVFrameCodec.DATA_HEADER_LENGTH + header.payloadLength()));
			frame.writeByte(KVFrameCodec.TYPE_DATA);
			KVFrameCodec.writeDataHeader(frame, header);
			payload(frame, header, srcAddress, srcStride, header.count());
			write(frame);
		}

		@Override
		public void scatter(ScatterHeader header, long[] srcAddresses) {
			ByteBuf head = ScatterCodec.encode(channel.alloc(), header, 0, header.count(),
					(int) header.payloadLength());
			ByteBuf frame = channel.alloc().buffer().writeBytes(head);
			head.release();
			for (int i = 0; i < header.count(); i++) {
				byte[] piece = new byte[header.length(i)];
				PlatformDependent.copyMemory(srcAddresses[i], piece, 0, piece.length);
				frame.writeBytes(piece);
			}
			write(frame);
		}

		/** Appends {@code chunks} chunks of the header's payload, read from the rogue's memory. */
		private void payload(ByteBuf frame, DataHeader header, long srcAddress, long srcStride, int chunks) {
			for (int c = 0; c < chunks && header.chunkLen() > 0; c++) {
				long from = srcAddress + (header.count() == 1 ? 0 : c * srcStride);
				byte[] chunk = new byte[header.chunkLen()];
				PlatformDependent.copyMemory(from, chunk, 0, chunk.length);
				frame.writeBytes(chunk);
			}
		}

		private void write(ByteBuf frame) {
			Channel c = channel;
			if (c.isActive()) {
				c.writeAndFlush(frame);
			}
			else {
				frame.release();
			}
		}

		@Override
		public boolean forge(Forgery forgery, long room) {
			ByteBuf frame = switch (forgery) {
				case LEASE_TOO_SHORT, LEASE_TOO_LONG -> {
					ByteBuf f = KVFrameCodec.encode(channel.alloc(), new KVMessage.HelloAck(layout, room), MAX_FRAME);
					f.setLong(f.writerIndex() - 8, forgery == Forgery.LEASE_TOO_SHORT ? 1 : Long.MAX_VALUE);
					yield f;
				}
				case TOO_MANY_REGIONS -> tooManyRegions(room);
				case TRUNCATED_CONTROL -> {
					ByteBuf f = status(room);
					f.setInt(0, f.getInt(0) - 5);
					yield f.writerIndex(f.writerIndex() - 5);
				}
				case TRAILING_BYTES -> {
					ByteBuf honest = status(room);
					ByteBuf f = Unpooled.buffer(honest.readableBytes() + 3).writeBytes(honest).writeBytes(new byte[3]);
					honest.release();
					yield f.setInt(0, f.getInt(0) + 3);
				}
				case OVERLONG_FRAME -> Unpooled.buffer(5).writeInt(Integer.MAX_VALUE).writeByte(KVFrameCodec.TYPE_STATUS);
				case UNKNOWN_TYPE -> Unpooled.buffer(5).writeInt(1).writeByte(0x7f);
				case EMPTY_FRAME -> Unpooled.buffer(4).writeInt(0);
				case BAD_STATUS_CODE -> {
					ByteBuf f = status(room);
					// After the length, the type and the room: the status byte.
					yield f.setByte(4 + 1 + 8, 99);
				}
				case NEGATIVE_CHUNK -> {
					ByteBuf f = Unpooled.buffer();
					f.writeInt(1 + KVFrameCodec.DATA_HEADER_LENGTH).writeByte(KVFrameCodec.TYPE_DATA);
					yield KVFrameCodec.writeDataHeader(f, new DataHeader(room, RegionKind.KV, 0, 0, -1, 0, 1));
				}
				case DATA_LENGTH_MISMATCH -> {
					ByteBuf f = Unpooled.buffer();
					f.writeInt(1 + KVFrameCodec.DATA_HEADER_LENGTH + 8 + 4).writeByte(KVFrameCodec.TYPE_DATA);
					KVFrameCodec.writeDataHeader(f, new DataHeader(room, RegionKind.KV, 0, 0, 8, 0, 1));
					yield f.writeBytes(new byte[12]);
				}
				case TRUNCATED_DATA -> {
					ByteBuf f = Unpooled.buffer();
					f.writeInt(1 + KVFrameCodec.DATA_HEADER_LENGTH + 64).writeByte(KVFrameCodec.TYPE_DATA);
					KVFrameCodec.writeDataHeader(f, new DataHeader(room, RegionKind.KV, 0, 0, 64, 0, 1));
					yield f.writeBytes(new byte[32]);
				}
			};
			Channel c = channel;
			if (forgery == Forgery.TRUNCATED_DATA) {
				c.writeAndFlush(frame).addListener(done -> c.close());
			}
			else {
				write(frame);
			}
			return true;
		}

		private ByteBuf status(long room) {
			return KVFrameCodec.encode(channel.alloc(), new KVMessage.Status(room, KVPoll.SUCCESS, 0, "", 0,
					KVMessage.NO_CHECKSUM), MAX_FRAME);
		}

		/**
		 * A {@code HELLO_ACK} whose layout lists one KV region more than any layout may: the honest frame with its KV
		 * region list replaced.
		 */
		private ByteBuf tooManyRegions(long token) {
			ByteBuf honest = KVFrameCodec.encode(channel.alloc(), new KVMessage.HelloAck(layout, token), MAX_FRAME);
			try {
				// Length and type, then the layout up to its KV regions: engine rank, 8 parallel sizes, page size,
				// MLA, the dtype string, 4 head and layer counts.
				int kvAt = 4 + 1 + 4 + 32 + 4 + 1 + 4 + layout.dtype().length() + 16;
				int kvEnd = kvAt + 4 + 12 * layout.kv().size();
				int regions = PeerLayout.MAX_REGIONS + 1;
				ByteBuf f = Unpooled.buffer();
				f.writeInt(0);
				f.writeBytes(honest, 4, kvAt - 4);
				f.writeInt(regions);
				for (int i = 0; i < regions; i++) {
					f.writeInt(layout.kv().get(0).itemLen()).writeLong(layout.kv().get(0).itemCount());
				}
				f.writeBytes(honest, kvEnd, honest.writerIndex() - kvEnd);
				return f.setInt(0, f.writerIndex() - 4);
			}
			finally {
				honest.release();
			}
		}

		@Override
		public boolean silence() {
			silent = true;
			return true;
		}

		@Override
		public void close() {
			// Closed when this returns, so that the next step finds it closed.
			channel.close().awaitUninterruptibly(10, TimeUnit.SECONDS);
		}

		@Override
		public boolean isOpen() {
			Channel c = channel;
			return c != null && c.isActive();
		}

		@Override
		public String toString() {
			return id();
		}
	}
}
