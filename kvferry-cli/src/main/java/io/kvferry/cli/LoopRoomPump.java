package io.kvferry.cli;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;

import io.kvferry.spi.NativeMemory;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.FixedLengthFrameDecoder;
import org.jspecify.annotations.Nullable;

/**
 * Rooms' pieces moved the way a library whose receiver judges every room must move them on event loops, with nothing
 * else. For each room and rank pair the caller's thread hands a 64-byte request naming the room to the near (decode)
 * side's event loop. The far (prefill) side's event loop answers with the room's pieces in frames of up to 256 pieces
 * and 512 KiB, as kvferry groups small pieces: a 16-byte header (the room, its first piece and how many), then the
 * pieces' bytes written from where they lie (a view of the memory each, no copy). The near event loop copies each
 * piece's bytes out of its read buffer into the piece's destination, found in its own table (the header only names
 * pieces, and pieces not of the named room fail the run), as the frame pump's reader and decode's reader of small
 * pieces do, and once a room's bytes all landed it sends a 64-byte verdict naming the room. A run ends when the far side read every room's verdict. One connection per rank pair, each with an
 * event loop on either side.
 * <p>
 * What it costs over a stream of the same frames between blocked threads is what rooms (a request and a verdict each)
 * and the event-loop model cost on this machine; kvferry's distance from it is kvferry's own. Not thread-safe; one
 * run at a time.
 */
final class LoopRoomPump implements AutoCloseable {

	/** What the names of its event loops' threads begin with, unless told otherwise. */
	static final String THREADS = "kvferry-roompump";
	private static final int MESSAGE = 64;
	private static final int HEADER = 16;
	// A frame's most pieces and bytes: as kvferry groups small pieces into scatter frames.
	private static final int FRAME_PIECES = 256;
	private static final int FRAME_BYTES = 512 << 10;
	private static final int REQUEST = 1;
	private static final int VERDICT = 2;

	private final EventLoopGroup near;
	private final EventLoopGroup far;
	private final Channel server;
	private final Channel[] clients;
	private final Near[] readers;
	private final Frames[] frames;
	private final Runs runs;

	private LoopRoomPump(EventLoopGroup near, EventLoopGroup far, Channel server, Channel[] clients, Near[] readers,
			Frames[] frames, Runs runs) {
		this.near = near;
		this.far = far;
		this.server = server;
		this.clients = clients;
		this.readers = readers;
		this.frames = frames;
		this.runs = runs;
	}

	/**
	 * Connects a pair of event loops over loopback for each rank pair, one connection each.
	 *
	 * @param pieces the rooms' pieces: memory the caller keeps alive until {@link #close}
	 * @param name what its threads' names begin with
	 */
	static LoopRoomPump open(RoomPieces pieces, String name) throws InterruptedIOException {
		long[][] each = pieces.pieces();
		int[][] roomStarts = pieces.roomStarts();
		int n = each.length;
		EventLoopGroup near = LoopPingPong.group(n, name + "-near");
		EventLoopGroup far = LoopPingPong.group(n, name + "-far");
		Runs runs = new Runs(n);
		Frames[] frames = new Frames[n];
		for (int c = 0; c < n; c++) {
			frames[c] = Frames.cut(each[c], roomStarts[c]);
		}
		try {
			Channel server = new ServerBootstrap().group(far).channel(LoopPingPong.serverType())
					.childOption(ChannelOption.TCP_NODELAY, true)
					.childHandler(new ChannelInitializer<SocketChannel>() {
						@Override
						protected void initChannel(SocketChannel ch) {
							ch.pipeline().addLast(new FixedLengthFrameDecoder(MESSAGE),
									new Far(frames, runs));
						}
					}).bind("127.0.0.1", 0).sync().channel();
			Channel[] clients = new Channel[n];
			Near[] readers = new Near[n];
			for (int c = 0; c < n; c++) {
				readers[c] = new Near(c, each[c], roomStarts[c], runs);
				clients[c] = new Bootstrap().group(near).channel(LoopPingPong.clientType())
						.option(ChannelOption.TCP_NODELAY, true).handler(readers[c])
						.connect(server.localAddress()).sync().channel();
			}
			return new LoopRoomPump(near, far, server, clients, readers, frames, runs);
		}
		catch (InterruptedException | RuntimeException e) {
			LoopPingPong.shutdown(near).syncUninterruptibly();
			LoopPingPong.shutdown(far).syncUninterruptibly();
			release(frames);
			if (e instanceof InterruptedException) {
				Thread.currentThread().interrupt();
				throw new InterruptedIOException("interrupted while connecting the event-loop room pump");
			}
			throw (RuntimeException) e;
		}
	}

	/**
	 * Requests every room on every connection, room by room, and waits until the far side read every verdict.
	 *
	 * @return nanoseconds from handing the first request over to the far side's reading the last verdict
	 * @throws IOException when the run did not end within {@link LoopPingPong#ANSWER_TIMEOUT}, or a connection failed
	 */
	long run() throws IOException {
		int rooms = readers[0].rooms;
		CompletableFuture<Long> done = runs.begin(rooms);
		for (int c = 0; c < clients.length; c++) {
			readers[c].reset(clients[c]);
		}
		long start = System.nanoTime();
		for (int room = 0; room < rooms; room++) {
			for (int c = 0; c < clients.length; c++) {
				readers[c].request(clients[c], room);
			}
		}
		try {
			return done.get(LoopPingPong.ANSWER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS) - start;
		}
		catch (TimeoutException e) {
			throw new IOException("the event-loop room pump's verdicts did not all arrive within "
					+ LoopPingPong.ANSWER_TIMEOUT.toSeconds() + " s", e);
		}
		catch (ExecutionException e) {
			throw new IOException("the event-loop room pump failed: " + e.getCause().getMessage(), e.getCause());
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new InterruptedIOException("interrupted while waiting for the event-loop room pump");
		}
	}

	@Override
	public void close() {
		for (Channel c : clients) {
			c.close();
		}
		server.close();
		LoopPingPong.shutdown(near).syncUninterruptibly();
		LoopPingPong.shutdown(far).syncUninterruptibly();
		release(frames);
	}

	private static void release(Frames[] frames) {
		for (Frames f : frames) {
			f.headers.release();
		}
	}

	private static ByteBuf message(Channel ch, int kind, int room, int conn) {
		return ch.alloc().directBuffer(MESSAGE).writeInt(kind).writeInt(room).writeInt(conn)
				.writeZero(MESSAGE - 3 * Integer.BYTES);
	}

	/**
	 * The run in flight: the verdicts the far side read, a room and connection each, and whom to tell when every one
	 * arrived, or when a room was judged twice.
	 */
	private static final class Runs {
		private final int connections;
		private final AtomicInteger verdictsLeft = new AtomicInteger();
		private volatile AtomicIntegerArray judged = new AtomicIntegerArray(0);
		private volatile CompletableFuture<Long> done = CompletableFuture.completedFuture(0L);

		Runs(int connections) {
			this.connections = connections;
		}

		CompletableFuture<Long> begin(int rooms) {
			CompletableFuture<Long> d = new CompletableFuture<>();
			done = d;
			judged = new AtomicIntegerArray(rooms * connections);
			verdictsLeft.set(rooms * connections);
			return d;
		}

		void verdict(int room, int conn) {
			if (judged.getAndIncrement(room * connections + conn) != 0) {
				fail(new IllegalStateException("room " + room + " was judged twice on connection " + conn));
			}
			else if (verdictsLeft.decrementAndGet() == 0) {
				done.complete(System.nanoTime());
			}
		}

		void fail(Throwable cause) {
			done.completeExceptionally(cause);
		}
	}

	/**
	 * What both sides share: the run they report to, and one flush for whatever a batch of reads wrote.
	 */
	private abstract static class Side extends ChannelInboundHandlerAdapter {
		final Runs runs;
		boolean unflushed;

		Side(Runs runs) {
			this.runs = runs;
		}

		@Override
		public void channelReadComplete(ChannelHandlerContext ctx) {
			if (unflushed) {
				unflushed = false;
				ctx.flush();
			}
		}

		@Override
		public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
			runs.fail(cause);
		}
	}

	/**
	 * One connection's pieces cut into frames of up to {@link #FRAME_PIECES} pieces and {@link #FRAME_BYTES} bytes, with
	 * every frame's header written once (a run sends views of it). The pump owns the headers and releases them once its
	 * event loops ended, so a loop shut down under an open connection cannot strand them.
	 *
	 * @param pieces the connection's (source, destination, length) triples
	 * @param first per frame its first piece, and the end of the pieces last (frames cover the pieces in order)
	 * @param roomFrames per room the index of its first frame, and the frame count last
	 * @param headers per frame the room's first piece, how many, the room and a zero word
	 */
	private record Frames(long[] pieces, int[] first, int[] roomFrames, ByteBuf headers) {

		static Frames cut(long[] pieces, int[] starts) {
			int rooms = starts.length - 1;
			int[] first = new int[starts[rooms] + 1];
			int[] roomFrames = new int[rooms + 1];
			ByteBuf headers = Unpooled.directBuffer(Math.max(1, starts[rooms]) * HEADER);
			int frames = 0;
			for (int r = 0; r < rooms; r++) {
				roomFrames[r] = frames;
				for (int p = starts[r]; p < starts[r + 1];) {
					int count = 0;
					long bytes = 0;
					while (p + count < starts[r + 1] && count < FRAME_PIECES
							&& (count == 0 || bytes + pieces[3 * (p + count) + 2] <= FRAME_BYTES)) {
						bytes += pieces[3 * (p + count) + 2];
						count++;
					}
					first[frames++] = p;
					headers.writeInt(p).writeInt(count).writeInt(r).writeInt(0);
					p += count;
				}
			}
			roomFrames[rooms] = frames;
			first[frames] = starts[rooms];
			return new Frames(pieces, first, roomFrames, headers);
		}
	}

	/**
	 * The far side of one connection: answers each request with the room's frames, a header and a view of the source
	 * memory of each piece, flushed once per batch of reads; counts the verdicts.
	 */
	private static final class Far extends Side {
		// Per connection its frames: each request names its connection.
		private final Frames[] all;

		Far(Frames[] all, Runs runs) {
			super(runs);
			this.all = all;
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			ByteBuf m = (ByteBuf) msg;
			int kind = m.readInt();
			int room = m.readInt();
			int conn = m.readInt();
			m.release();
			if (kind == VERDICT) {
				runs.verdict(room, conn);
				return;
			}
			Frames f = all[conn];
			long[] p = f.pieces;
			for (int frame = f.roomFrames[room]; frame < f.roomFrames[room + 1]; frame++) {
				ctx.write(f.headers.retainedSlice(frame * HEADER, HEADER), ctx.voidPromise());
				for (int i = f.first[frame]; i < f.first[frame + 1]; i++) {
					ctx.write(NativeMemory.wrap(p[3 * i], (int) p[3 * i + 2]), ctx.voidPromise());
				}
			}
			unflushed = true;
		}
	}

	/**
	 * The near side of one connection: sends the requests its caller hands over (one flush for those that queued up
	 * meanwhile), copies each frame's bytes into the destination and sends a room's verdict once its bytes all landed.
	 */
	private static final class Near extends Side {
		private final int conn;
		final int rooms;
		private final long[] pieces;
		private final int[] roomStarts;
		// All on the near event loop: each room's bytes not yet landed in this run, and the frame being read.
		private final long[] left;
		private final long[] bytes;
		private final ByteBuf header = Unpooled.buffer(HEADER);
		// A view retargeted at each frame's destination.
		private @Nullable ByteBuffer view;
		// The frame being read: its room, the piece being landed and the end of its pieces.
		private int room;
		private int piece;
		private int last;
		private int payload;
		private long at;
		private boolean flushQueued;
		// Set once a read failed the run: what follows is dropped unread.
		private boolean failed;

		Near(int conn, long[] pieces, int[] roomStarts, Runs runs) {
			super(runs);
			this.conn = conn;
			this.pieces = pieces;
			this.roomStarts = roomStarts;
			this.rooms = roomStarts.length - 1;
			this.left = new long[rooms];
			this.bytes = new long[rooms];
			for (int r = 0; r < rooms; r++) {
				for (int p = roomStarts[r]; p < roomStarts[r + 1]; p++) {
					bytes[r] += pieces[3 * p + 2];
				}
			}
		}

		/** Before a run's requests: every room's bytes are to come again. */
		void reset(Channel ch) {
			ch.eventLoop().execute(() -> System.arraycopy(bytes, 0, left, 0, rooms));
		}

		/** Hands a room's request to the connection's event loop: a task each, as a room's caller does. */
		void request(Channel ch, int r) {
			ch.eventLoop().execute(() -> {
				ch.write(message(ch, REQUEST, r, conn), ch.voidPromise());
				if (bytes[r] == 0) {
					// Nothing of the room on this rank pair: nothing will land, and its verdict is known.
					ch.write(message(ch, VERDICT, r, conn), ch.voidPromise());
				}
				if (!flushQueued) {
					// Behind the requests already queued: they go out in one write.
					flushQueued = true;
					ch.eventLoop().execute(() -> {
						flushQueued = false;
						ch.flush();
					});
				}
			});
		}

		@Override
		public void channelRead(ChannelHandlerContext ctx, Object msg) {
			ByteBuf in = (ByteBuf) msg;
			try {
				if (!failed) {
					land(ctx, in);
				}
			}
			catch (RuntimeException e) {
				failed = true;
				runs.fail(e);
				ctx.close();
			}
			finally {
				in.release();
			}
		}

		private void land(ChannelHandlerContext ctx, ByteBuf in) {
			while (in.isReadable()) {
				if (payload == 0) {
					in.readBytes(header, Math.min(header.writableBytes(), in.readableBytes()));
					if (!header.isWritable()) {
						int first = header.readInt();
						int count = header.readInt();
						room = header.readInt();
						header.clear();
						if (room < 0 || room >= rooms || count < 1 || first < roomStarts[room]
								|| first > roomStarts[room + 1] - count) {
							throw new IllegalStateException("pieces " + first + " + " + count + " are not room " + room
									+ "'s");
						}
						piece = first;
						last = first + count;
						next();
					}
					continue;
				}
				int n = Math.min(payload, in.readableBytes());
				left[room] -= n;
				if (left[room] < 0) {
					throw new IllegalStateException("room " + room + " got more bytes than its pieces hold");
				}
				view = NativeMemory.retarget(view, at, n);
				in.readBytes(view);
				at += n;
				payload -= n;
				if (payload == 0) {
					piece++;
					next();
				}
				if (left[room] == 0) {
					ctx.write(message(ctx.channel(), VERDICT, room, conn), ctx.voidPromise());
					unflushed = true;
				}
			}
		}

		/** Points the reads at the frame's next piece that has bytes, if any is left. */
		private void next() {
			for (; piece < last; piece++) {
				if (pieces[3 * piece + 2] > 0) {
					at = pieces[3 * piece + 1];
					payload = (int) pieces[3 * piece + 2];
					return;
				}
			}
		}

		@Override
		public void channelInactive(ChannelHandlerContext ctx) {
			runs.fail(new IllegalStateException("the far side closed connection " + conn));
		}
	}
}
