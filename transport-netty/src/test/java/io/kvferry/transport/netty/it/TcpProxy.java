package io.kvferry.transport.netty.it;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.HostPort;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelException;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.ReferenceCountUtil;

/**
 * A TCP relay on 127.0.0.1 between decode ranks and one prefill rank, for fault injection: it can cut every relayed
 * connection at once (with a reset, as a broken link does), refuse new ones while "down", and throttle the
 * target-to-client direction (a slow reader: it reads from the prefill rank only at a fixed pace, so the prefill side's
 * socket and then its write buffer fill up). It can also drop every relayed connection silently, as a NAT that forgot
 * an idle flow does: bytes are read and thrown away in both directions, and nothing (no FIN, no reset) reaches the
 * other leg, so each end learns of the loss only from its own silence detection.
 *
 * <p>Relaying follows the classic pattern: auto-read off on both sides, one read at a time, the next read only once the
 * previous bytes were written, so the proxy itself never holds more than one read per direction. Its buffers come from
 * an unpooled allocator of its own so that they do not show in the pooled allocator the tests measure. Its one event
 * loop thread never blocks.
 */
final class TcpProxy implements AutoCloseable {

	private static final ByteBufAllocator ALLOCATOR = new UnpooledByteBufAllocator(true);

	private final EventLoopGroup group;
	private final Channel server;
	private final HostPort target;
	private final Set<Channel> channels = ConcurrentHashMap.newKeySet();
	// Legs whose bytes and closes are dropped: the flows a middlebox forgot.
	private final Set<Channel> blackholed = ConcurrentHashMap.newKeySet();
	private final AtomicInteger accepted = new AtomicInteger();
	private final AtomicLong relayedToClient = new AtomicLong();
	private final int throttleReadBytes;
	private final long throttleTickNanos;
	private volatile boolean refusing;

	private TcpProxy(HostPort target, int throttleReadBytes, Duration throttleTick) {
		this.target = target;
		this.throttleReadBytes = throttleReadBytes;
		this.throttleTickNanos = throttleTick.toNanos();
		this.group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
		ServerBootstrap bootstrap = new ServerBootstrap()
				.group(group)
				.channel(NioServerSocketChannel.class)
				.option(ChannelOption.SO_REUSEADDR, true)
				.childOption(ChannelOption.AUTO_READ, false)
				.childOption(ChannelOption.TCP_NODELAY, true)
				.childOption(ChannelOption.ALLOCATOR, ALLOCATOR)
				.childHandler(new ChannelInitializer<Channel>() {
					@Override
					protected void initChannel(Channel ch) {
						accept(ch);
					}
				});
		this.server = bootstrap.bind("127.0.0.1", 0).syncUninterruptibly().channel();
	}

	/** @return a proxy to {@code target} that relays at full speed */
	static TcpProxy start(HostPort target) {
		Objects.requireNonNull(target, "target");
		return new TcpProxy(target, 0, Duration.ZERO);
	}

	/**
	 * @param target where to relay to
	 * @param readBytes bytes read from the target per tick (one read call)
	 * @param tick pause between two reads from the target
	 * @return a proxy that relays target-to-client bytes at most {@code readBytes} per {@code tick}
	 */
	static TcpProxy throttled(HostPort target, int readBytes, Duration tick) {
		Objects.requireNonNull(target, "target");
		Objects.requireNonNull(tick, "tick");
		if (readBytes < 1 || tick.isNegative() || tick.isZero()) {
			throw new IllegalArgumentException("throttle : " + readBytes + " bytes per " + tick
					+ " (expected: >= 1 byte per positive tick)");
		}
		return new TcpProxy(target, readBytes, tick);
	}

	/** @return the address clients dial */
	HostPort address() {
		return new HostPort("127.0.0.1", ((InetSocketAddress) server.localAddress()).getPort());
	}

	/** @return connections accepted so far (refused ones included) */
	int accepted() {
		return accepted.get();
	}

	/** @return open relayed channels, both legs counted */
	int openChannels() {
		return channels.size();
	}

	/** @return bytes relayed from the target to clients */
	long relayedToClient() {
		return relayedToClient.get();
	}

	/**
	 * While {@code refusing}, new connections are accepted and reset at once (the rank looks down); existing ones are
	 * untouched.
	 */
	void refuse(boolean refusing) {
		this.refusing = refusing;
	}

	/**
	 * Resets every relayed connection, both legs (a cut link), and waits until they are closed.
	 *
	 * @return how many channels were closed
	 */
	int cut() {
		// Count first: closing one leg makes its relay close the other.
		List<Channel> open = channels.stream().filter(Channel::isOpen).toList();
		for (Channel ch : open) {
			reset(ch);
		}
		for (Channel ch : open) {
			ch.closeFuture().awaitUninterruptibly(10, TimeUnit.SECONDS);
		}
		return open.size();
	}

	/**
	 * Silently drops every connection relayed so far, both legs: what either end writes is read and discarded, and a
	 * leg's close is not passed on. Connections accepted afterwards are relayed as usual.
	 *
	 * @return the dropped legs (two per relayed connection)
	 */
	List<Channel> blackhole() {
		List<Channel> open = channels.stream().filter(Channel::isOpen).toList();
		blackholed.addAll(open);
		return open;
	}

	/**
	 * Waits until every leg has been closed by the end it faces (that end gave the connection up).
	 *
	 * @return whether all closed within the timeout
	 */
	static boolean awaitClosed(List<Channel> legs, Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		for (Channel ch : legs) {
			long left = deadline - System.nanoTime();
			if (left <= 0 || !ch.closeFuture().awaitUninterruptibly(left, TimeUnit.NANOSECONDS)) {
				return false;
			}
		}
		return true;
	}

	@Override
	public void close() {
		server.close().awaitUninterruptibly(10, TimeUnit.SECONDS);
		cut();
		group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
	}

	private static ChannelFuture reset(Channel ch) {
		if (ch.isOpen()) {
			try {
				// SO_LINGER 0: close() sends an RST instead of a FIN, as a broken link or a killed peer would.
				ch.config().setOption(ChannelOption.SO_LINGER, 0);
			}
			catch (ChannelException e) {
				// Closed by its own event loop since isOpen(): there is nothing left to reset.
			}
		}
		return ch.close();
	}

	private void accept(Channel client) {
		accepted.incrementAndGet();
		if (refusing) {
			client.eventLoop().execute(() -> reset(client));
			return;
		}
		channels.add(client);
		client.closeFuture().addListener(f -> channels.remove(client));
		boolean throttle = throttleReadBytes > 0;
		Bootstrap bootstrap = new Bootstrap()
				.group(client.eventLoop())
				.channel(NioSocketChannel.class)
				.option(ChannelOption.AUTO_READ, false)
				.option(ChannelOption.TCP_NODELAY, true)
				.option(ChannelOption.ALLOCATOR, ALLOCATOR)
				.handler(new ChannelInboundHandlerAdapter());
		if (throttle) {
			// A small kernel buffer too, so that the target feels the slow reader at once.
			bootstrap.option(ChannelOption.RECVBUF_ALLOCATOR,
					new FixedRecvByteBufAllocator(throttleReadBytes).maxMessagesPerRead(1))
					.option(ChannelOption.SO_RCVBUF, Math.max(throttleReadBytes, 64 * 1024));
		}
		ChannelFuture connecting = bootstrap.connect(target.host(), target.port());
		Channel upstream = connecting.channel();
		channels.add(upstream);
		upstream.closeFuture().addListener(f -> channels.remove(upstream));
		connecting.addListener((ChannelFuture f) -> {
			if (!f.isSuccess() || !client.isActive()) {
				reset(client);
				reset(upstream);
				return;
			}
			client.pipeline().addLast(new Relay(upstream, false, 0));
			upstream.pipeline().addLast(new Relay(client, true, throttle ? throttleTickNanos : 0));
			client.read();
			upstream.read();
		});
	}

	/** Writes what one side reads to the other; reads again once written (after a pause when throttled). */
	private final class Relay extends ChannelInboundHandlerAdapter {

		private final Channel peer;
		private final boolean towardClient;
		private final long pauseNanos;

		Relay(Channel peer, boolean towardClient, long pauseNanos) {
			this.peer = peer;
			this.towardClient = towardClient;
			this.pauseNanos = pauseNanos;
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			if (blackholed.contains(ctx.channel())) {
				// A forgotten flow: its packets go nowhere, and the sender's kernel keeps being drained.
				ReferenceCountUtil.release(msg);
				ctx.channel().read();
				return;
			}
			if (towardClient && msg instanceof ByteBuf b) {
				relayedToClient.addAndGet(b.readableBytes());
			}
			peer.writeAndFlush(msg).addListener((ChannelFuture f) -> {
				if (!f.isSuccess()) {
					reset(ctx.channel());
				}
				else if (pauseNanos > 0) {
					ctx.executor().schedule(() -> {
						ctx.channel().read();
					}, pauseNanos, TimeUnit.NANOSECONDS);
				}
				else {
					ctx.channel().read();
				}
			});
		}

		@Override
		public void channelInactive(ChannelHandlerContext ctx) {
			// Pass the close on: a half-dead relay would hide the failure from the other side. A forgotten flow's
			// close goes nowhere, as its other packets do.
			if (peer.isActive() && !blackholed.contains(ctx.channel())) {
				peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
			}
		}

		@Override
		public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
			reset(ctx.channel());
			if (!blackholed.contains(ctx.channel())) {
				reset(peer);
			}
		}
	}
}
