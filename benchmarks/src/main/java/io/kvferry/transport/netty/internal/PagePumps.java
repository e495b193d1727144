package io.kvferry.transport.netty.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.kvferry.spi.NativeMemory;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.internal.PlatformDependent;

/**
 * Page size 1's pieces moved over loopback by pumps that do nothing else, on blocked threads and on event loops, so
 * that what the event-loop model and Netty's transports cost such a stream shows apart from anything kvferry does:
 * 2 KiB pages in runs of 1 to 4, scattered over a pool on both sides; one connection; the writer gathers 256 pieces
 * per write in place (a composite of views on the event loops, {@code writev} of up to 1,024 slices on a thread).
 *
 * <ul>
 * <li>{@code blocked}: a writer and a reader thread, {@code readv} straight into the pages (the bench's page-size-1
 * pump);</li>
 * <li>{@code nio-readv}: two NIO event loops, the reader on the transport's own {@link LandingNioSocketChannel},
 * each read one {@code readv} straight into the next 256 pages ({@link ScatterZone}), as decode's on NIO;</li>
 * <li>{@code nio-copy} and {@code epoll-copy}: two event loops whose reader reads into Netty's buffers and copies each
 * piece into its page, as kvferry's decode does.</li>
 * </ul>
 *
 * Every run checks the first and last bytes of every piece. Run with {@code java -cp benchmarks/target/benchmarks.jar
 * io.kvferry.transport.netty.internal.PagePumps [rounds] [pool MiB]}; it prints each round and the medians of the
 * ratios to {@code blocked}.
 */
public final class PagePumps implements AutoCloseable {

	static final int PAGE = 2048;
	private static final int PIECES_PER_WRITE = 256;
	private static final int SLICES_PER_CALL = 1024;
	private static final long RUN_TIMEOUT_SECONDS = 120;

	/** The pumps, in the order each round runs them. */
	enum Pump {
		BLOCKED, NIO_READV, NIO_COPY, EPOLL_COPY;

		String label() {
			return name().toLowerCase(Locale.ROOT).replace('_', '-');
		}
	}

	private final long src;
	private final long dst;
	private final long pool;
	private final ByteBuffer[] sources;
	private final ByteBuffer[] destinations;
	private final long bytes;
	private final EventLoopGroup[] nio = { loops(false), loops(false) };
	private final EventLoopGroup[] epoll = Epoll.isAvailable() ? new EventLoopGroup[] { loops(true), loops(true) }
			: nio;

	/**
	 * @param poolBytes bytes of each side's pool; three quarters of its pages are moved
	 * @param seed where the runs fall
	 */
	PagePumps(long poolBytes, long seed) {
		if (!PlatformDependent.hasUnsafe()) {
			throw new IllegalStateException("the page pumps need sun.misc.Unsafe to address their pages");
		}
		this.pool = poolBytes;
		this.src = PlatformDependent.allocateMemory(poolBytes);
		this.dst = PlatformDependent.allocateMemory(poolBytes);
		int pages = (int) (poolBytes / PAGE);
		Random random = new Random(seed);
		int[] from = blocksShuffled(pages, random);
		int[] to = blocksShuffled(pages, random);
		List<ByteBuffer> s = new ArrayList<>();
		List<ByteBuffer> d = new ArrayList<>();
		long total = 0;
		int used = pages * 3 / 4;
		for (int k = 0; k < used;) {
			int want = Math.min(1 + random.nextInt(4), used - k);
			int run = 1;
			while (run < want && from[k + run] == from[k + run - 1] + 1 && to[k + run] == to[k + run - 1] + 1) {
				run++;
			}
			s.add(NativeMemory.byteBuffer(src + (long) from[k] * PAGE, run * PAGE));
			d.add(NativeMemory.byteBuffer(dst + (long) to[k] * PAGE, run * PAGE));
			total += (long) run * PAGE;
			k += run;
		}
		this.sources = s.toArray(new ByteBuffer[0]);
		this.destinations = d.toArray(new ByteBuffer[0]);
		this.bytes = total;
		for (long i = 0; i < poolBytes; i += Long.BYTES) {
			PlatformDependent.putLong(src + i, i * 0x9E3779B97F4A7C15L);
		}
	}

	/** Pages in blocks of four, the blocks shuffled and each rotated: runs of adjacent pages survive, up to four. */
	private static int[] blocksShuffled(int pages, Random random) {
		int blocks = pages / 4;
		int[] order = new int[blocks];
		for (int i = 0; i < blocks; i++) {
			order[i] = i;
		}
		for (int i = blocks - 1; i > 0; i--) {
			int j = random.nextInt(i + 1);
			int t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		int[] a = new int[blocks * 4];
		for (int i = 0; i < blocks; i++) {
			int cut = random.nextInt(4);
			for (int k = 0; k < 4; k++) {
				a[i * 4 + k] = order[i] * 4 + (k + cut) % 4;
			}
		}
		return a;
	}

	private static EventLoopGroup loops(boolean epoll) {
		return new MultiThreadIoEventLoopGroup(1, epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
	}

	/** @return payload bytes of one run */
	long bytes() {
		return bytes;
	}

	/** @return pieces of one run */
	int pieces() {
		return sources.length;
	}

	/**
	 * Moves every piece once with {@code pump} into zeroed pages, then checks them.
	 *
	 * @return nanoseconds from the first write to the last byte in place
	 * @throws IllegalStateException naming the first piece that did not arrive whole
	 */
	long run(Pump pump) throws Exception {
		PlatformDependent.setMemory(dst, pool, (byte) 0);
		for (ByteBuffer b : sources) {
			b.clear();
		}
		for (ByteBuffer b : destinations) {
			b.clear();
		}
		long nanos = switch (pump) {
			case BLOCKED -> blocked();
			case NIO_READV -> loop(nio, true, false);
			case NIO_COPY -> loop(nio, false, false);
			case EPOLL_COPY -> loop(epoll, false, epoll != nio);
		};
		for (int i = 0; i < sources.length; i++) {
			long from = PlatformDependent.directBufferAddress(sources[i]);
			long to = PlatformDependent.directBufferAddress(destinations[i]);
			int last = sources[i].capacity() - Long.BYTES;
			if (PlatformDependent.getLong(from) != PlatformDependent.getLong(to)
					|| PlatformDependent.getLong(from + last) != PlatformDependent.getLong(to + last)) {
				throw new IllegalStateException(pump.label() + ": piece " + i + " did not arrive whole");
			}
		}
		return nanos;
	}

	private long blocked() throws Exception {
		try (ServerSocketChannel listener = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
				SocketChannel near = SocketChannel.open(listener.getLocalAddress());
				SocketChannel far = listener.accept()) {
			long start = System.nanoTime();
			CompletableFuture<Long> reader = new CompletableFuture<>();
			Thread t = new Thread(() -> {
				try {
					transfer(far, destinations, false);
					reader.complete(System.nanoTime());
				}
				catch (IOException | RuntimeException e) {
					reader.completeExceptionally(e);
				}
			}, "page-pump-reader");
			t.start();
			transfer(near, sources, true);
			return reader.get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS) - start;
		}
	}

	private static void transfer(SocketChannel c, ByteBuffer[] pieces, boolean write) throws IOException {
		int i = 0;
		while (i < pieces.length) {
			int n = Math.min(SLICES_PER_CALL, pieces.length - i);
			long moved = write ? c.write(pieces, i, n) : c.read(pieces, i, n);
			if (moved < 0) {
				throw new IOException("the connection closed after " + i + " of " + pieces.length + " pieces");
			}
			while (i < pieces.length && !pieces[i].hasRemaining()) {
				i++;
			}
		}
	}

	private long loop(EventLoopGroup[] groups, boolean readv, boolean epollChannels) throws Exception {
		CompletableFuture<Long> done = new CompletableFuture<>();
		CompletableFuture<Long> started = new CompletableFuture<>();
		Class<? extends ServerChannel> serverType = readv ? LandingNioServerSocketChannel.class
				: epollChannels ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
		Channel server = new ServerBootstrap().group(groups[0]).channel(serverType)
				.childOption(ChannelOption.TCP_NODELAY, true)
				.childHandler(new ChannelInitializer<>() {
					@Override
					protected void initChannel(Channel ch) {
						Reader reader = new Reader(destinations, bytes, done);
						RecvByteBufAllocator buffers = new AdaptiveRecvByteBufAllocator(64, 64 * 1024, 4 << 20);
						ch.config().setRecvByteBufAllocator(readv ? reader.scattering(buffers) : buffers);
						ch.pipeline().addLast(reader);
					}
				}).bind("127.0.0.1", 0).sync().channel();
		Channel client = null;
		try {
			client = new Bootstrap().group(groups[1])
					.channel(epollChannels ? EpollSocketChannel.class : NioSocketChannel.class)
					.option(ChannelOption.TCP_NODELAY, true)
					.option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(4 << 20, 8 << 20))
					.handler(new Writer(sources, started)).connect(server.localAddress()).sync().channel();
			long end = done.get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
			return end - started.get();
		}
		catch (TimeoutException | ExecutionException e) {
			throw new IllegalStateException("an event-loop pump did not finish: " + e, e);
		}
		finally {
			if (client != null) {
				client.close().sync();
			}
			server.close().sync();
		}
	}

	/** Writes every piece, 256 to a write of views in place, as long as the channel stays writable. */
	private static final class Writer extends ChannelInboundHandlerAdapter {

		private final ByteBuffer[] pieces;
		private final CompletableFuture<Long> started;
		private int next;

		Writer(ByteBuffer[] pieces, CompletableFuture<Long> started) {
			this.pieces = pieces;
			this.started = started;
		}

		@Override
		public void channelActive(ChannelHandlerContext ctx) {
			started.complete(System.nanoTime());
			pump(ctx.channel());
		}

		@Override
		public void channelWritabilityChanged(ChannelHandlerContext ctx) {
			pump(ctx.channel());
		}

		private void pump(Channel ch) {
			boolean wrote = false;
			while (next < pieces.length && ch.isWritable()) {
				int to = Math.min(pieces.length, next + PIECES_PER_WRITE);
				CompositeByteBuf write = ch.alloc().compositeDirectBuffer(to - next);
				for (int i = next; i < to; i++) {
					write.addComponent(true, NativeMemory.view(PlatformDependent.directBufferAddress(pieces[i]),
							pieces[i].capacity()));
				}
				next = to;
				ch.write(write, ch.voidPromise());
				wrote = true;
			}
			if (wrote) {
				ch.flush();
			}
		}
	}

	/** Copies each read's bytes into the pages in order, or counts what a scattering read landed in them. */
	private static final class Reader extends ChannelInboundHandlerAdapter {

		private final ByteBuffer[] pieces;
		private final long bytes;
		private final CompletableFuture<Long> done;
		// The next pages a scattering read fills, refilled before each read.
		private final ByteBuffer[] next = new ByteBuffer[PIECES_PER_WRITE];
		private int piece;
		private long landed;

		Reader(ByteBuffer[] pieces, long bytes, CompletableFuture<Long> done) {
			this.pieces = pieces;
			this.bytes = bytes;
			this.done = done;
		}

		/**
		 * @return an allocator whose every read is a {@link ScatterZone} over the next 256 pages, for the transport's
		 *         {@link LandingNioSocketChannel} to fill with one {@code readv}
		 */
		RecvByteBufAllocator scattering(RecvByteBufAllocator delegate) {
			return () -> new RecvByteBufAllocator.DelegatingHandle(delegate.newHandle()) {
				@Override
				public ByteBuf allocate(ByteBufAllocator alloc) {
					int n = Math.min(PIECES_PER_WRITE, pieces.length - piece);
					System.arraycopy(pieces, piece, next, 0, n);
					long zone = 0;
					for (int i = 0; i < n; i++) {
						zone += next[i].remaining();
					}
					return new ScatterZone(next, n, zone);
				}
			};
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			ByteBuf read = (ByteBuf) msg;
			try {
				if (read instanceof ScatterZone zone) {
					landed(zone.landed());
					return;
				}
				while (read.isReadable()) {
					ByteBuffer p = pieces[piece];
					int n = Math.min(read.readableBytes(), p.remaining());
					NativeMemory.copy(read, read.readerIndex(), PlatformDependent.directBufferAddress(p) + p.position(),
							n);
					read.skipBytes(n);
					p.position(p.position() + n);
					landed(n);
				}
			}
			finally {
				read.release();
			}
		}

		/** {@code n} more bytes are in place. */
		void landed(long n) {
			landed += n;
			while (piece < pieces.length && !pieces[piece].hasRemaining()) {
				piece++;
			}
			if (landed == bytes) {
				done.complete(System.nanoTime());
			}
		}

		@Override
		public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
			done.completeExceptionally(cause);
		}
	}

	@Override
	public void close() {
		for (EventLoopGroup g : new EventLoopGroup[] { nio[0], nio[1], epoll[0], epoll[1] }) {
			g.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
		}
		PlatformDependent.freeMemory(src);
		PlatformDependent.freeMemory(dst);
	}

	/**
	 * @param args rounds (default 7), then each side's pool in MiB (default 600)
	 */
	public static void main(String[] args) throws Exception {
		int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 7;
		long poolMiB = args.length > 1 ? Long.parseLong(args[1]) : 600;
		Pump[] pumps = Pump.values();
		double[][] ratios = new double[pumps.length][rounds];
		try (PagePumps p = new PagePumps(poolMiB << 20, 11)) {
			System.out.printf(Locale.ROOT, "%,d pieces, %,d bytes per run; %s%n", p.pieces(), p.bytes(),
					Epoll.isAvailable() ? "epoll available" : "no epoll: epoll-copy runs on NIO");
			// One unmeasured round: the JIT and the kernel's socket buffers warm up.
			for (Pump pump : pumps) {
				p.run(pump);
			}
			for (int r = 0; r < rounds; r++) {
				StringBuilder line = new StringBuilder("round " + (r + 1) + ":");
				double base = 0;
				for (int k = 0; k < pumps.length; k++) {
					double gbps = p.bytes() / (double) p.run(pumps[k]);
					base = k == 0 ? gbps : base;
					ratios[k][r] = gbps / base;
					line.append(String.format(Locale.ROOT, "  %s %.2f GB/s (%.2f)", pumps[k].label(), gbps,
							ratios[k][r]));
				}
				System.out.println(line);
			}
		}
		StringBuilder medians = new StringBuilder("median ratio to blocked (range):");
		for (int k = 1; k < pumps.length; k++) {
			double[] sorted = ratios[k].clone();
			Arrays.sort(sorted);
			medians.append(String.format(Locale.ROOT, "  %s %.2f (%.2f-%.2f)", pumps[k].label(),
					sorted[sorted.length / 2], sorted[0], sorted[sorted.length - 1]));
		}
		System.out.println(medians);
	}
}
