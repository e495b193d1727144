package io.kvferry.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.function.IntUnaryOperator;

import io.kvferry.harness.ModelShape;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;

/**
 * What the scaling rows are held against, in the same run: for rooms one at a time, a TCP ping-pong of the same bytes
 * (a request, the room's bytes back, read into direct memory: the least a room asks of two threads), and for the
 * ranks rows the frame pump over one plain connection per rank pair (the rows' pieces, a frame each, with no request,
 * report or ledger). Both name a floor this machine sets, so that a row's distance from its target reads as kvferry's
 * share or the machine's.
 */
final class ScalingBaselines {

	private ScalingBaselines() {
	}

	/**
	 * A 64-byte request answered by {@code payload} bytes over loopback: between two blocked threads, and between two
	 * event loops with the asker's verdict sent back ({@link LoopPingPong#withVerdict}), a room's three trips.
	 */
	static final class PingPong implements AutoCloseable {

		private final TcpBaseline tcp;
		private final LoopPingPong verdict;
		private final CleanableDirectBuffer src;
		private final CleanableDirectBuffer dst;
		private final int payload;

		PingPong(int payload) {
			this.payload = payload;
			this.src = PlatformDependent.allocateDirect(payload);
			this.dst = PlatformDependent.allocateDirect(payload);
			TcpBaseline.fill(src.buffer(), 5);
			TcpBaseline t = null;
			try {
				t = TcpBaseline.open();
				this.verdict = LoopPingPong.withVerdict(src.buffer(), payload);
			}
			catch (IOException e) {
				release(new TcpBaseline[] { t }, src, dst);
				throw new UncheckedIOException(e);
			}
			catch (InterruptedException e) {
				Thread.currentThread().interrupt();
				release(new TcpBaseline[] { t }, src, dst);
				throw new IllegalStateException("interrupted while connecting the event-loop ping-pong", e);
			}
			this.tcp = t;
		}

		/**
		 * @param exchanges round trips between the blocked threads, one at a time
		 * @return process CPU nanoseconds per round trip and the round trips' median nanoseconds, in that order
		 * @throws UncheckedIOException when a round trip failed or moved wrong bytes
		 */
		long[] run(int exchanges) {
			return Arrays.copyOf(measure(exchanges, "the ping-pong", () -> tcp.pingPong(src.buffer(), dst.buffer(),
					payload, exchanges)), 2);
		}

		/**
		 * @param exchanges rounds between the event loops, each ended by the verdict, one at a time
		 * @return process CPU nanoseconds per round, the rounds' median nanoseconds and the CPU nanoseconds per round
		 *         of the two event loops, in that order
		 * @throws UncheckedIOException when a round failed or moved wrong bytes
		 */
		long[] runWithVerdict(int exchanges) {
			return measure(exchanges, "the event-loop ping-pong with a verdict", () -> {
				long[] rounds = new long[exchanges];
				for (int i = 0; i < exchanges; i++) {
					rounds[i] = verdict.ping(dst.buffer());
				}
				return rounds;
			});
		}

		private interface Rounds {
			long[] run() throws IOException;
		}

		/** @return CPU per round, the rounds' median and the CPU per round of the verdict ping-pong's event loops */
		private long[] measure(int exchanges, String what, Rounds rounds) {
			zero(dst.buffer());
			try {
				ProcessCpu cpu0 = ProcessCpu.start();
				long[] rtt = rounds.run();
				long cpu = cpu0.nanos();
				long at = dst.buffer().mismatch(src.buffer());
				if (at >= 0) {
					throw new IOException(what + " moved wrong bytes (at " + at + ")");
				}
				return new long[] { cpu / exchanges, TcpBaseline.median(rtt),
						cpu0.nanosOf(LoopPingPong.THREADS) / exchanges };
			}
			catch (IOException e) {
				throw new UncheckedIOException(e);
			}
		}

		@Override
		public void close() {
			verdict.close();
			release(new TcpBaseline[] { tcp }, src, dst);
		}
	}

	/**
	 * The frame pump of a ranks row: per room, rank pair and layer buffer, one frame per page (the pages of a
	 * scattered pool are rarely adjacent), rank pair {@code r}'s frames over connection {@code r}.
	 */
	static final class RanksPump implements AutoCloseable {

		private final TcpBaseline[] pairs;
		private final CleanableDirectBuffer src;
		private final CleanableDirectBuffer dst;
		private final int[][] frames;
		private final long bytes;
		private boolean checked;

		/**
		 * @param pages the pages of room {@code i} of the batch
		 */
		RanksPump(ModelShape shape, int tp, int rooms, IntUnaryOperator pages) {
			int page = shape.itemLen(tp);
			int buffers = shape.layers() * (shape.mla() ? 1 : 2);
			long perRank = 0;
			for (int i = 0; i < rooms; i++) {
				perRank += (long) pages.applyAsInt(i) * buffers * page;
			}
			int perConnection = Math.toIntExact(perRank / page);
			this.bytes = perRank * tp;
			this.frames = new int[tp][2 * perConnection];
			for (int r = 0; r < tp; r++) {
				for (int f = 0; f < perConnection; f++) {
					frames[r][2 * f] = Math.toIntExact(r * perRank + (long) f * page);
					frames[r][2 * f + 1] = page;
				}
			}
			this.pairs = new TcpBaseline[tp];
			this.src = PlatformDependent.allocateDirect(Math.toIntExact(bytes));
			this.dst = PlatformDependent.allocateDirect(Math.toIntExact(bytes));
			TcpBaseline.fill(src.buffer(), 11);
			try {
				for (int r = 0; r < tp; r++) {
					pairs[r] = TcpBaseline.open();
				}
			}
			catch (IOException e) {
				close();
				throw new UncheckedIOException(e);
			}
		}

		/** @return the payload bytes of one run */
		long bytes() {
			return bytes;
		}

		/**
		 * @return nanoseconds of one run; the first lands in zeroed memory and is checked byte for byte
		 * @throws UncheckedIOException when a connection failed or the first run moved wrong bytes
		 */
		long run() {
			if (!checked) {
				zero(dst.buffer());
			}
			try {
				long nanos = TcpBaseline.frames(pairs, src.buffer(), dst.buffer(), frames);
				if (!checked) {
					long at = dst.buffer().mismatch(src.buffer());
					if (at >= 0) {
						throw new IOException("the ranks frame pump moved wrong bytes (at " + at + ")");
					}
					checked = true;
				}
				return nanos;
			}
			catch (IOException e) {
				throw new UncheckedIOException(e);
			}
		}

		@Override
		public void close() {
			release(pairs, src, dst);
		}
	}

	/** Closes the connections (null entries skipped) and frees the buffers. */
	private static void release(TcpBaseline[] connections, CleanableDirectBuffer src, CleanableDirectBuffer dst) {
		for (TcpBaseline c : connections) {
			try {
				if (c != null) {
					c.close();
				}
			}
			catch (IOException e) {
				// Loopback sockets of a finished measurement: nothing is lost.
			}
		}
		src.clean();
		dst.clean();
	}

	/** Zeroes a direct buffer, so that a check after a run sees only bytes the run wrote. */
	private static void zero(ByteBuffer b) {
		PlatformDependent.setMemory(PlatformDependent.directBufferAddress(b), b.capacity(), (byte) 0);
	}
}
