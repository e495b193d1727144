package io.kvferry.cli;

import java.io.IOException;
import java.util.List;

import io.kvferry.harness.KVCluster;
import io.kvferry.harness.StagedRoom;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;
import org.jspecify.annotations.Nullable;

/**
 * The many test's baselines, each moving the pieces of the first batch's rooms ({@link RoomPieces}), a frame per
 * piece, over a connection per rank pair:
 * <ul>
 * <li>the frame pump: blocked threads stream the frames with no room around them, from one buffer into another, the
 * pieces laid one after another;</li>
 * <li>the event-loop room pump over the same two buffers ({@link LoopRoomPump}): per room a request and a verdict,
 * on event loops;</li>
 * <li>the event-loop room pump from and to the rooms' own pages, scattered over the ranks' pools as kvferry finds
 * them: the unavoidable work of the batch.</li>
 * </ul>
 * The first run of each lands in zeroed memory and is checked byte for byte. Not thread-safe.
 */
final class ManyPumps implements AutoCloseable {

	private final TcpBaseline[] pair;
	private final CleanableDirectBuffer src;
	private final CleanableDirectBuffer dst;
	// Per connection, (offset, length) pairs in src and dst.
	private final int[][] frames;
	private final LoopRoomPump laidOut;
	private final LoopRoomPump onPages;
	private final long bytes;

	private ManyPumps(TcpBaseline[] pair, CleanableDirectBuffer src, CleanableDirectBuffer dst, int[][] frames,
			LoopRoomPump laidOut, LoopRoomPump onPages, long bytes) {
		this.pair = pair;
		this.src = src;
		this.dst = dst;
		this.frames = frames;
		this.laidOut = laidOut;
		this.onPages = onPages;
		this.bytes = bytes;
	}

	/**
	 * Opens the pumps over the pieces of {@code rooms}, which ended, and checks a first run of each.
	 *
	 * @param failures where a pump that moved wrong bytes is told
	 */
	static ManyPumps open(KVCluster cluster, List<StagedRoom> rooms, List<String> failures) throws IOException {
		RoomPieces pieces = RoomPieces.of(cluster, rooms);
		long bytes = pieces.bytes();
		CleanableDirectBuffer src = PlatformDependent.allocateDirect(Math.toIntExact(bytes));
		CleanableDirectBuffer dst = PlatformDependent.allocateDirect(Math.toIntExact(bytes));
		TcpBaseline[] pair = new TcpBaseline[pieces.pairs()];
		LoopRoomPump laidOut = null;
		LoopRoomPump onPages = null;
		try {
			for (int r = 0; r < pair.length; r++) {
				pair[r] = TcpBaseline.open();
			}
			TcpBaseline.fill(src.buffer(), 3);
			long base = PlatformDependent.directBufferAddress(src.buffer());
			RoomPieces laid = pieces.laidOut(base, PlatformDependent.directBufferAddress(dst.buffer()));
			int[][] frames = new int[pair.length][];
			for (int r = 0; r < pair.length; r++) {
				long[] p = laid.pieces()[r];
				frames[r] = new int[p.length / 3 * 2];
				for (int i = 0; i < p.length / 3; i++) {
					frames[r][2 * i] = Math.toIntExact(p[3 * i] - base);
					frames[r][2 * i + 1] = Math.toIntExact(p[3 * i + 2]);
				}
			}
			TcpBaseline.frames(pair, src.buffer(), dst.buffer(), frames);
			check("the frame pump", laid, failures);
			laid.clearDestinations();
			laidOut = LoopRoomPump.open(laid, LoopRoomPump.THREADS + "-laid");
			laidOut.run();
			check("the event-loop room pump", laid, failures);
			// The rooms ended: their destination pages hold what kvferry landed, and are zeroed for the check.
			pieces.clearDestinations();
			onPages = LoopRoomPump.open(pieces, LoopRoomPump.THREADS);
			onPages.run();
			check("the event-loop room pump on the rooms' pages", pieces, failures);
			return new ManyPumps(pair, src, dst, frames, laidOut, onPages, bytes);
		}
		catch (IOException | RuntimeException e) {
			try {
				close(pair, src, dst, laidOut, onPages);
			}
			catch (IOException suppressed) {
				e.addSuppressed(suppressed);
			}
			throw e;
		}
	}

	private static void check(String pump, RoomPieces pieces, List<String> failures) {
		if (!pieces.landed()) {
			failures.add("many: " + pump + " moved wrong bytes");
		}
	}

	/** @return payload bytes of a run of any of the pumps */
	long bytes() {
		return bytes;
	}

	/** @return frames of a run, over all connections */
	int frames() {
		int n = 0;
		for (int[] f : frames) {
			n += f.length / 2;
		}
		return n;
	}

	/** @return nanoseconds of a run of each in turn: the frame pump, the room pump laid out as it, on the pages */
	long[] run() throws IOException {
		return new long[] { TcpBaseline.frames(pair, src.buffer(), dst.buffer(), frames), laidOut.run(),
				onPages.run() };
	}

	@Override
	public void close() throws IOException {
		close(pair, src, dst, laidOut, onPages);
	}

	private static void close(TcpBaseline[] pair, CleanableDirectBuffer src, CleanableDirectBuffer dst,
			@Nullable LoopRoomPump laidOut, @Nullable LoopRoomPump onPages) throws IOException {
		try {
			if (onPages != null) {
				onPages.close();
			}
			if (laidOut != null) {
				laidOut.close();
			}
			for (TcpBaseline t : pair) {
				if (t != null) {
					t.close();
				}
			}
		}
		finally {
			src.clean();
			dst.clean();
		}
	}
}
