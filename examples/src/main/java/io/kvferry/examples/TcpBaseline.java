package io.kvferry.examples;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * The baselines kvferry is measured against: the strongest simple ways to move the same bytes over one loopback TCP
 * connection with blocking NIO, from direct memory straight into direct memory. One instance owns one connection and
 * a peer thread; not thread-safe, close it when done.
 */
final class TcpBaseline implements AutoCloseable {

	/** Bytes per write, as the SPEC's pump baseline. */
	static final int WRITE_SIZE = 1 << 20;
	private static final int REQUEST_SIZE = 64;

	private final SocketChannel near;
	private final SocketChannel far;

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
		ByteBuffer in = dst.duplicate().clear().limit(src.capacity());
		CompletableFuture<Long> done = CompletableFuture.supplyAsync(() -> {
			try {
				readFully(far, in);
				return System.nanoTime();
			}
			catch (IOException e) {
				throw new UncheckedIOException(e);
			}
		}, command -> new Thread(command, "kvferry-bench-pump-reader").start());
		long start = System.nanoTime();
		writeSlices(near, src, src.capacity());
		return join(done) - start;
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
		CompletableFuture<Long> peer = CompletableFuture.supplyAsync(() -> {
			ByteBuffer request = ByteBuffer.allocateDirect(REQUEST_SIZE);
			try {
				for (int i = 0; i < rounds; i++) {
					readFully(far, request.clear());
					writeSlices(far, src, payload);
				}
				return 0L;
			}
			catch (IOException e) {
				throw new UncheckedIOException(e);
			}
		}, command -> new Thread(command, "kvferry-bench-pong").start());
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
			readFully(near, dst.duplicate().clear().limit(payload));
			return System.nanoTime() - start;
		}

		/** Waits for the peer to end (after its last round). */
		void finish() throws IOException {
			join(peer);
		}
	}

	/** Writes the first {@code bytes} of {@code src} in slices of at most {@link #WRITE_SIZE}. */
	private static void writeSlices(SocketChannel c, ByteBuffer src, int bytes) throws IOException {
		ByteBuffer out = src.duplicate().clear();
		for (int pos = 0; pos < bytes; pos = out.position()) {
			out.limit(Math.min(bytes, pos + WRITE_SIZE));
			while (out.hasRemaining()) {
				c.write(out);
			}
		}
	}

	private static void readFully(SocketChannel c, ByteBuffer b) throws IOException {
		while (b.hasRemaining()) {
			if (c.read(b) < 0) {
				throw new EOFException("peer closed with " + b.remaining() + " bytes to go");
			}
		}
	}

	private static long join(CompletableFuture<Long> f) throws IOException {
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
