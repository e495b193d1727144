package io.kvferry.cli;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

/**
 * The TCP ping-pong done the way a non-blocking library must do it, with nothing else: the caller's thread hands a
 * 64-byte request to its side's event loop, which writes it; the peer's event loop reads it and answers with the
 * payload in one write of the source; the near event loop reads the answer straight into the destination (each read
 * lands in a view of it, no copy) and completes the caller's future, which wakes the caller. Each side has its own
 * event loop, as a decode and a prefill rank have theirs. What it costs beyond the blocking ping-pong is the event-loop
 * model's share of a room's time (two more thread hand-offs per round trip), not any library's.
 * <p>
 * {@linkplain #withVerdict With a verdict} it is the least a room whose receiver judges it can be: once the answer
 * landed whole, the near event loop sends a 64-byte verdict back, and the round ends when the far event loop read it,
 * as a room ends when prefill learned of decode's Success. Three one-way trips, the caller's hand-off and its wake-up:
 * what no design that keeps the verdict on the receiving side and never blocks an event loop can do without.
 * <p>
 * Not thread-safe; one round trip at a time.
 */
final class LoopPingPong implements AutoCloseable {

	/** What the names of its event loops' threads begin with (as Linux shows them, cut to 15 characters). */
	static final String THREADS = "kvferry-pingpon";
	private static final int REQUEST_SIZE = 64;
	// A round trip takes milliseconds; far longer means the far side is stuck, which the bench should say, not hang on.
	static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(30);

	private final EventLoopGroup near;
	private final EventLoopGroup far;
	private final Channel server;
	private final Channel client;
	private final Answer answer;
	private final Verdicts verdicts;
	// The request, and with verdicts the verdict too: 64 bytes whose content nobody reads.
	private final ByteBuf request;

	private LoopPingPong(EventLoopGroup near, EventLoopGroup far, Channel server, Channel client, Answer answer,
			Verdicts verdicts, ByteBuf request) {
		this.near = near;
		this.far = far;
		this.server = server;
		this.client = client;
		this.answer = answer;
		this.verdicts = verdicts;
		this.request = request;
	}

	/**
	 * Connects a near and a far event loop over loopback; the far one answers every 64-byte request with the first
	 * {@code payload} bytes of {@code src}.
	 */
	static LoopPingPong open(ByteBuffer src, int payload) throws InterruptedException {
		return open(src, payload, false);
	}

	/**
	 * As {@link #open}, and each round trip ends only once the far event loop read the near one's verdict on the
	 * whole answer.
	 */
	static LoopPingPong withVerdict(ByteBuffer src, int payload) throws InterruptedException {
		return open(src, payload, true);
	}

	private static LoopPingPong open(ByteBuffer src, int payload, boolean verdict) throws InterruptedException {
		EventLoopGroup near = group(1, THREADS + "near");
		EventLoopGroup far = group(1, THREADS + "far");
		ByteBuf request = Unpooled.directBuffer(REQUEST_SIZE).writeZero(REQUEST_SIZE);
		try {
			ByteBuf source = Unpooled.wrappedBuffer(src.duplicate().clear().limit(payload));
			Verdicts verdicts = new Verdicts(verdict);
			Channel server = new ServerBootstrap().group(far).channel(serverType())
					.childOption(ChannelOption.TCP_NODELAY, true)
					.childHandler(new ChannelInitializer<SocketChannel>() {
						@Override
						protected void initChannel(SocketChannel ch) {
							ch.pipeline().addLast(new Pong(source, verdicts));
						}
					}).bind("127.0.0.1", 0).sync().channel();
			Answer answer = new Answer(payload, verdict ? request : null);
			Channel client = new Bootstrap().group(near).channel(clientType())
					.option(ChannelOption.TCP_NODELAY, true).option(ChannelOption.ALLOCATOR, answer)
					.handler(answer.handler()).connect(server.localAddress()).sync().channel();
			// The listening socket stays open until the end: a connection still in its accept queue when it closed
			// would be reset (connect completes with the handshake, before the far loop accepted it).
			return new LoopPingPong(near, far, server, client, answer, verdicts, request);
		}
		catch (InterruptedException | RuntimeException e) {
			request.release();
			shutdown(near);
			shutdown(far);
			throw e;
		}
	}

	/** @return {@code threads} event loops of epoll where it runs, else NIO, their threads named {@code name}-N */
	static EventLoopGroup group(int threads, String name) {
		IoHandlerFactory io = Epoll.isAvailable() ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
		return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true), io);
	}

	/** @return the listening channel of {@link #group}'s transport */
	static Class<? extends ServerChannel> serverType() {
		return Epoll.isAvailable() ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
	}

	/** @return the connecting channel of {@link #group}'s transport */
	static Class<? extends Channel> clientType() {
		return Epoll.isAvailable() ? EpollSocketChannel.class : NioSocketChannel.class;
	}

	/** Stops a group at once: nothing of a pump's is left to finish. */
	static io.netty.util.concurrent.Future<?> shutdown(EventLoopGroup group) {
		return group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
	}

	/**
	 * @return nanoseconds from handing the request over to the last byte of the answer in {@code dst}, or with a
	 *         verdict to the far side's reading it
	 * @throws IOException when the round did not end within {@link #ANSWER_TIMEOUT}, or the connection failed
	 */
	long ping(ByteBuffer dst) throws IOException {
		CompletableFuture<Void> done = new CompletableFuture<>();
		CompletableFuture<Void> end = verdicts.expected ? verdicts.expect() : done;
		long start = System.nanoTime();
		client.eventLoop().execute(() -> {
			answer.expect(dst, done);
			client.writeAndFlush(request.retainedDuplicate());
		});
		if (end != done) {
			// A failed answer sends no verdict: its failure ends the wait.
			done.whenComplete((v, e) -> {
				if (e != null) {
					end.completeExceptionally(e);
				}
			});
		}
		try {
			end.get(ANSWER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (TimeoutException e) {
			throw new IOException("the event-loop ping-pong's answer did not arrive whole within "
					+ ANSWER_TIMEOUT.toSeconds() + " s", e);
		}
		catch (ExecutionException e) {
			throw new IOException("the event-loop ping-pong failed: " + e.getCause().getMessage(), e.getCause());
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new InterruptedIOException("interrupted while waiting for the event-loop ping-pong's answer");
		}
		return System.nanoTime() - start;
	}

	@Override
	public void close() {
		client.close();
		server.close();
		shutdown(near).syncUninterruptibly();
		shutdown(far).syncUninterruptibly();
		request.release();
	}

	/**
	 * Where the far side reports the verdicts it read: the round in flight's future, set by the caller before it
	 * hands the request over and completed on the far event loop.
	 */
	private static final class Verdicts {
		final boolean expected;
		private volatile CompletableFuture<Void> round = CompletableFuture.completedFuture(null);

		Verdicts(boolean expected) {
			this.expected = expected;
		}

		CompletableFuture<Void> expect() {
			CompletableFuture<Void> r = new CompletableFuture<>();
			round = r;
			return r;
		}

		void read() {
			round.complete(null);
		}
	}

	/**
	 * The far side: answers each whole request with the payload (a view of the source, whose memory it never frees);
	 * with verdicts, the 64-byte messages alternate between a request and the verdict on its answer.
	 */
	private static final class Pong extends ChannelInboundHandlerAdapter {
		private final ByteBuf source;
		private final Verdicts verdicts;
		private int received;
		private long messages;

		Pong(ByteBuf source, Verdicts verdicts) {
			this.source = source;
			this.verdicts = verdicts;
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			ByteBuf in = (ByteBuf) msg;
			received += in.readableBytes();
			in.release();
			for (; received >= REQUEST_SIZE; received -= REQUEST_SIZE) {
				if (verdicts.expected && (messages++ & 1) == 1) {
					verdicts.read();
				}
				else {
					ctx.write(source.retainedDuplicate());
				}
			}
			ctx.flush();
		}
	}

	/**
	 * The near side's reads and where they land: as the channel's allocator it hands each read a view of the
	 * destination at the bytes received so far (reads come one at a time on the event loop, each delivered before
	 * the next is allocated), and as its handler it counts what landed and completes the round trip.
	 */
	private static final class Answer extends AbstractByteBufAllocator {
		private final int payload;
		// The message the near side sends once the answer landed whole; null without verdicts.
		private final ByteBuf verdict;
		// Both used on the near event loop only.
		private ByteBuffer dst = ByteBuffer.allocateDirect(0);
		private int landed;
		private CompletableFuture<Void> done = CompletableFuture.completedFuture(null);

		Answer(int payload, ByteBuf verdict) {
			super(true);
			this.payload = payload;
			this.verdict = verdict;
		}

		void expect(ByteBuffer dst, CompletableFuture<Void> done) {
			this.dst = dst;
			this.landed = 0;
			this.done = done;
		}

		@Override
		protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
			int n = Math.min(initialCapacity, payload - landed);
			if (n <= 0) {
				// Bytes past the answer: a fault of the far side, read where they harm nothing and failed below.
				return Unpooled.directBuffer(initialCapacity);
			}
			return Unpooled.wrappedBuffer(dst.duplicate().clear().position(landed).limit(landed + n)).clear();
		}

		@Override
		protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
			return newDirectBuffer(initialCapacity, maxCapacity);
		}

		@Override
		public boolean isDirectBufferPooled() {
			return false;
		}

		/** The handler's part, as an inbound adapter delegating here; see {@link #handler}. */
		void read(ChannelHandlerContext ctx, ByteBuf in) {
			int n = in.readableBytes();
			in.release();
			landed += n;
			if (landed > payload) {
				done.completeExceptionally(new IllegalStateException("the far side answered " + landed
						+ " bytes, more than the " + payload + " asked"));
			}
			else if (landed == payload) {
				if (verdict != null) {
					ctx.writeAndFlush(verdict.retainedDuplicate(), ctx.voidPromise());
				}
				done.complete(null);
			}
		}

		ChannelInboundHandlerAdapter handler() {
			return new ChannelInboundHandlerAdapter() {
				@Override
				public void channelRead(ChannelHandlerContext ctx, Object msg) {
					read(ctx, (ByteBuf) msg);
				}

				@Override
				public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
					done.completeExceptionally(cause);
				}

				@Override
				public void channelInactive(ChannelHandlerContext ctx) {
					done.completeExceptionally(new IllegalStateException("the far side closed the connection"));
				}
			};
		}
	}
}
