package io.kvferry.cli;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import io.kvferry.harness.Patterns;

/**
 * The baselines kvferry is measured against: the strongest simple ways to move the same bytes over loopback TCP with
 * blocking NIO, from direct memory straight into direct memory (one connection, or several striped, optionally with
 * {@code SO_RCVLOWAT}), and the cache-hot ring that shows what the wire itself carries. One instance owns one
 * connection; not thread-safe, close it when done.
 */
final class TcpBaseline implements AutoCloseable {

	/** Bytes per write, as the SPEC's pump baseline. */
	static final int WRITE_SIZE = 1 << 20;
	private static final int REQUEST_SIZE = 64;

	private final SocketChannel near;
	private final SocketChannel far;
	private RcvLowat lowat;

	private TcpBaseline(SocketChannel near, SocketChannel far) {
		this.near = near;
		this.far = far;
	}

	/** @return a connected pair on the loopback interface */
	static TcpBaseline open() throws IOException {
		try (ServerSocketChannel server = ServerSocketChannel.open()) {
			server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
			SocketChannel near = SocketChannel.open(server.getLocalAddress());
			SocketChannel far = server.accept();
			for (SocketChannel c : new SocketChannel[] { near, far }) {
				c.setOption(StandardSocketOptions.TCP_NODELAY, true);
			}
			return new TcpBaseline(near, far);
		}
	}

	/**
	 * Pumps all of {@code src} into {@code dst}: this thread writes 1 MiB slices, a peer thread reads straight into
	 * the destination.
	 *
	 * @return nanoseconds from the first write to the last byte read
	 */
	long pump(ByteBuffer src, ByteBuffer dst) throws IOException {
		return pump(new TcpBaseline[] { this }, src, dst, false);
	}

	/**
	 * Pumps all of {@code src} into {@code dst} over several connections at once, each moving its own contiguous
	 * share with a writer and a reader thread of its own: what striping over connections gains, in its simplest form.
	 *
	 * @param streams the connections (distinct)
	 * @param lowat whether each reader reads as an event loop does with {@code SO_RCVLOWAT} at min(1 MiB, bytes it
	 *        still expects), so that it wakes for large slices only (see {@link #readWithMark})
	 * @return nanoseconds from the first write to the last byte read
	 * @throws IOException also when {@code lowat} is asked for and unavailable here
	 */
	static long pump(TcpBaseline[] streams, ByteBuffer src, ByteBuffer dst, boolean lowat) throws IOException {
		int n = streams.length;
		int size = src.capacity();
		List<CompletableFuture<Long>> done = new ArrayList<>();
		RcvLowat[] marks = new RcvLowat[n];
		for (int i = 0; i < n; i++) {
			marks[i] = lowat ? streams[i].lowat() : null;
		}
		long start = System.nanoTime();
		for (int i = 0; i < n; i++) {
			int from = share(size, n, i);
			int to = share(size, n, i + 1);
			SocketChannel far = streams[i].far;
			RcvLowat mark = marks[i];
			ByteBuffer in = dst.duplicate().clear().limit(to).position(from);
			done.add(async("kvferry-bench-pump-reader-" + i, () -> {
				readFully(far, in, mark);
				return System.nanoTime();
			}));
			if (i > 0) {
				SocketChannel near = streams[i].near;
				done.add(async("kvferry-bench-pump-writer-" + i, () -> {
					writeSlices(near, src, from, to);
					return 0L;
				}));
			}
		}
		writeSlices(streams[0].near, src, 0, share(size, n, 1));
		long end = 0;
		for (CompletableFuture<Long> f : done) {
			end = Math.max(end, join(f));
		}
		return end - start;
	}

	/** Bytes of a frame header in {@link #frames}: destination offset and payload length. */
	static final int FRAME_HEADER = 16;
	// Frames handed to one gathering write: as an event loop's flush hands its queued frames to one writev.
	private static final int FRAMES_PER_WRITE = 64;
	// Bytes one read takes at most: as an event loop's read buffer.
	private static final int READ_SIZE = 128 << 10;

	/**
	 * The least work that moves many small frames: each connection's writer sends its frames, a 16-byte header
	 * (destination offset, length) and a payload read in place from {@code src}, in gathering writes of up to 64
	 * frames; its reader reads up to 128 KiB at a time into a buffer of its own and copies each payload to its offset
	 * in {@code dst}. Three copies per byte, as kvferry's frames below its landing threshold take, and no per-frame
	 * bookkeeping beyond the header.
	 *
	 * @param frames per connection, its frames as (offset, length) pairs: the payload is {@code src}'s bytes there,
	 *        and they land at the same offset of {@code dst}
	 * @return nanoseconds from the first write to the last byte copied out
	 */
	static long frames(TcpBaseline[] streams, ByteBuffer src, ByteBuffer dst, int[][] frames) throws IOException {
		int n = streams.length;
		ByteBuffer[][] headers = new ByteBuffer[n][];
		for (int i = 0; i < n; i++) {
			headers[i] = new ByteBuffer[frames[i].length / 2];
			// One buffer per connection, a slice per header: a direct buffer of its own per header would leave the
			// collector tens of thousands of cleaners per run to process while kvferry's rooms move.
			ByteBuffer all = ByteBuffer.allocateDirect(headers[i].length * FRAME_HEADER);
			for (int f = 0; f < headers[i].length; f++) {
				headers[i][f] = all.slice(f * FRAME_HEADER, FRAME_HEADER).putLong(0, frames[i][2 * f])
						.putLong(Long.BYTES, frames[i][2 * f + 1]);
			}
		}
		List<CompletableFuture<Long>> done = new ArrayList<>();
		long start = System.nanoTime();
		for (int i = 0; i < n; i++) {
			SocketChannel far = streams[i].far;
			long payload = 0;
			for (int f = 1; f < frames[i].length; f += 2) {
				payload += frames[i][f];
			}
			long bytes = payload + (long) headers[i].length * FRAME_HEADER;
			done.add(async("kvferry-bench-frames-reader-" + i, () -> {
				readFrames(far, dst, bytes);
				return System.nanoTime();
			}));
			if (i > 0) {
				SocketChannel near = streams[i].near;
				int[] mine = frames[i];
				ByteBuffer[] heads = headers[i];
				done.add(async("kvferry-bench-frames-writer-" + i, () -> {
					writeFrames(near, src, mine, heads);
					return 0L;
				}));
			}
		}
		writeFrames(streams[0].near, src, frames[0], headers[0]);
		long end = 0;
		for (CompletableFuture<Long> f : done) {
			end = Math.max(end, join(f));
		}
		return end - start;
	}

	private static void writeFrames(SocketChannel c, ByteBuffer src, int[] frames, ByteBuffer[] headers)
			throws IOException {
		ByteBuffer[] batch = new ByteBuffer[2 * FRAMES_PER_WRITE];
		for (int first = 0; first < headers.length; first += FRAMES_PER_WRITE) {
			int count = Math.min(FRAMES_PER_WRITE, headers.length - first);
			for (int f = 0; f < count; f++) {
				int at = frames[2 * (first + f)];
				batch[2 * f] = headers[first + f].clear();
				batch[2 * f + 1] = src.slice(at, frames[2 * (first + f) + 1]);
			}
			int last = 2 * count;
			for (int from = 0; from < last;) {
				c.write(batch, from, last - from);
				while (from < last && !batch[from].hasRemaining()) {
					from++;
				}
			}
		}
	}

	private static void readFrames(SocketChannel c, ByteBuffer dst, long bytes) throws IOException {
		ByteBuffer in = ByteBuffer.allocateDirect(READ_SIZE);
		ByteBuffer header = ByteBuffer.allocate(FRAME_HEADER);
		ByteBuffer out = dst.duplicate();
		long left = bytes;
		// Payload bytes of the current frame still to copy; 0 while a header is being read.
		int payload = 0;
		while (left > 0) {
			in.clear().limit((int) Math.min(READ_SIZE, left));
			if (c.read(in) < 0) {
				throw new EOFException("peer closed with " + left + " bytes to go");
			}
			in.flip();
			left -= in.remaining();
			while (in.hasRemaining()) {
				if (payload == 0) {
					int take = Math.min(header.remaining(), in.remaining());
					header.put(header.position(), in, in.position(), take);
					header.position(header.position() + take);
					in.position(in.position() + take);
					if (!header.hasRemaining()) {
						out.clear().position((int) header.getLong(0));
						payload = (int) header.getLong(Long.BYTES);
						out.limit(out.position() + payload);
						header.clear();
					}
					continue;
				}
				int take = Math.min(payload, in.remaining());
				out.put(out.position(), in, in.position(), take);
				out.position(out.position() + take);
				in.position(in.position() + take);
				payload -= take;
			}
		}
	}

	/**
	 * The loopback ceiling, as {@code iperf3 -l 1M}: this thread writes one cache-hot buffer over and over, a peer
	 * thread reads into another one over and over, until {@code bytes} have moved. No cold memory is touched, so this
	 * is what the wire itself carries, not a fair target for gigabytes of KV.
	 *
	 * @return nanoseconds from the first write to the last byte read
	 */
	long ring(ByteBuffer hotSrc, ByteBuffer hotDst, long bytes) throws IOException {
		CompletableFuture<Long> done = async("kvferry-bench-ring-reader", () -> {
			ByteBuffer in = hotDst.duplicate();
			for (long left = bytes; left > 0;) {
				in.clear().limit((int) Math.min(in.capacity(), left));
				readFully(far, in, null);
				left -= in.limit();
			}
			return System.nanoTime();
		});
		long start = System.nanoTime();
		ByteBuffer out = hotSrc.duplicate();
		for (long left = bytes; left > 0;) {
			out.clear().limit((int) Math.min(out.capacity(), left));
			left -= out.limit();
			while (out.hasRemaining()) {
				near.write(out);
			}
		}
		return join(done) - start;
	}

	/**
	 * Writes KV-like bytes over all of {@code b}, as kvferry's source pages are written before each room: a pump
	 * reading never-written memory would read the kernel's shared zero page, which is always in cache.
	 */
	static void fill(ByteBuffer b, long seed) {
		ByteBuffer w = b.duplicate().clear();
		int words = w.capacity() / Long.BYTES;
		for (int i = 0; i < words; i++) {
			w.putLong(i * Long.BYTES, Patterns.word(seed, 0, 0, i, 0, 0));
		}
		for (int i = words * Long.BYTES; i < w.capacity(); i++) {
			w.put(i, (byte) seed);
		}
	}

	/** Fixes the receiving side's buffer (the kernel then stops growing it), as a constrained peer would. */
	void receiveBuffer(int bytes) throws IOException {
		far.setOption(StandardSocketOptions.SO_RCVBUF, bytes);
	}

	/** @return the receiving side's {@code SO_RCVLOWAT} now */
	int lowWaterMark() throws IOException {
		return lowat().get();
	}

	private RcvLowat lowat() throws IOException {
		if (lowat == null) {
			lowat = RcvLowat.of(far);
		}
		return lowat;
	}

	private static int share(int size, int streams, int i) {
		return (int) ((long) size * i / streams);
	}

	/** @return the writing end of the connection */
	SocketChannel near() {
		return near;
	}

	/** @return the reading end of the connection */
	SocketChannel far() {
		return far;
	}

	/**
	 * The kernel's TCP congestion control for new connections, which every connection of the bench uses: on loopback
	 * BBR paces a connection's segments to its bandwidth estimate, so a burst after an idle spell (a small room, a
	 * ping-pong) goes out at that pace, where CUBIC sends it as fast as the copies go.
	 *
	 * @return its name, or {@code "unknown"} where the system does not say (not Linux)
	 */
	static String congestionControl() {
		try {
			return Files.readString(Path.of("/proc/sys/net/ipv4/tcp_congestion_control")).trim();
		}
		catch (IOException | RuntimeException e) {
			return "unknown";
		}
	}

	/** Runs {@code call} on a new thread of that name. */
	static CompletableFuture<Long> async(String thread, IoCall call) {
		return CompletableFuture.supplyAsync(() -> {
			try {
				return call.run();
			}
			catch (IOException e) {
				throw new UncheckedIOException(e);
			}
		}, command -> new Thread(command, thread).start());
	}

	@FunctionalInterface
	interface IoCall {
		long run() throws IOException;
	}

	/**
	 * Ping-pong: this side writes a 64-byte request, the peer answers with {@code payload} bytes read from
	 * {@code src}, and this side reads them into {@code dst}; repeated {@code iterations} times.
	 *
	 * @return each round trip's nanoseconds
	 */
	long[] pingPong(ByteBuffer src, ByteBuffer dst, int payload, int iterations) throws IOException {
		PingPong p = pingPong(src, payload, iterations);
		long[] rtt = new long[iterations];
		for (int i = 0; i < iterations; i++) {
			rtt[i] = p.ping(dst);
		}
		p.finish();
		return rtt;
	}

	/**
	 * Starts a peer that answers {@code rounds} requests, so that round trips can be timed one at a time, in between
	 * other measurements.
	 */
	PingPong pingPong(ByteBuffer src, int payload, int rounds) {
		CompletableFuture<Long> peer = async("kvferry-bench-pong", () -> {
			ByteBuffer request = ByteBuffer.allocateDirect(REQUEST_SIZE);
			for (int i = 0; i < rounds; i++) {
				readFully(far, request.clear(), null);
				writeSlices(far, src, 0, payload);
			}
			return 0L;
		});
		return new PingPong(peer, payload);
	}

	/** The near side of a ping-pong; {@link #ping} once per round the peer was started for. */
	final class PingPong {

		private final CompletableFuture<Long> peer;
		private final int payload;
		private final ByteBuffer request = ByteBuffer.allocateDirect(REQUEST_SIZE);

		private PingPong(CompletableFuture<Long> peer, int payload) {
			this.peer = peer;
			this.payload = payload;
		}

		/** @return nanoseconds from writing the request to the last byte of the answer read into {@code dst} */
		long ping(ByteBuffer dst) throws IOException {
			long start = System.nanoTime();
			request.clear();
			while (request.hasRemaining()) {
				near.write(request);
			}
			readFully(near, dst.duplicate().clear().limit(payload), null);
			return System.nanoTime() - start;
		}

		/** Waits for the peer to end (after its last round). */
		void finish() throws IOException {
			join(peer);
		}
	}

	/** Writes bytes {@code from} to {@code to} of {@code src} in slices of at most {@link #WRITE_SIZE}. */
	private static void writeSlices(SocketChannel c, ByteBuffer src, int from, int to) throws IOException {
		ByteBuffer out = src.duplicate().clear().position(from);
		for (int pos = from; pos < to; pos = out.position()) {
			out.limit(Math.min(to, pos + WRITE_SIZE));
			while (out.hasRemaining()) {
				c.write(out);
			}
		}
	}

	/** Reads until {@code b} is full, blocking, or with a mark, as {@link #readWithMark} does. */
	private static void readFully(SocketChannel c, ByteBuffer b, RcvLowat mark) throws IOException {
		if (mark != null) {
			readWithMark(c, b, mark);
			return;
		}
		while (b.hasRemaining()) {
			if (c.read(b) < 0) {
				throw new EOFException("peer closed with " + b.remaining() + " bytes to go");
			}
		}
	}

	/**
	 * Reads until {@code b} is full as an event loop does, non-blocking reads and a selector (epoll), with
	 * {@code SO_RCVLOWAT} at min(1 MiB, bytes still expected) so that it wakes for large slices only; the mark is 1
	 * again after. Not a blocking read: the kernel wakes a reader blocked in {@code recv} only once the bytes
	 * <em>queued</em> reach the mark, so one that already copied part of its target sleeps for good when the rest of
	 * the stream is shorter than the mark (this pump hung so).
	 */
	private static void readWithMark(SocketChannel c, ByteBuffer b, RcvLowat mark) throws IOException {
		c.configureBlocking(false);
		try (Selector selector = Selector.open()) {
			c.register(selector, SelectionKey.OP_READ);
			while (b.hasRemaining()) {
				mark.set(Math.min(WRITE_SIZE, b.remaining()));
				int n = c.read(b);
				if (n < 0) {
					throw new EOFException("peer closed with " + b.remaining() + " bytes to go");
				}
				if (n == 0) {
					selector.select();
					selector.selectedKeys().clear();
				}
			}
		}
		finally {
			mark.set(1);
			// The selector's close deregistered the channel: it may block again.
			c.configureBlocking(true);
		}
	}

	/** @return the future's value; a failure of its thread as an {@link IOException} */
	static long join(CompletableFuture<Long> f) throws IOException {
		try {
			return f.get();
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IOException("interrupted", e);
		}
		catch (ExecutionException e) {
			throw new IOException("baseline peer failed: " + e.getCause(), e.getCause());
		}
	}

	/** @return the median of {@code values} (sorted in place) */
	static long median(long[] values) {
		Arrays.sort(values);
		return values[values.length / 2];
	}

	@Override
	public void close() throws IOException {
		try {
			near.close();
		}
		finally {
			far.close();
		}
	}
}
