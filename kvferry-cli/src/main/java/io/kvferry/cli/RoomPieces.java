package io.kvferry.cli;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;

import io.kvferry.MemoryRegion;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.RankMemory;
import io.kvferry.harness.StagedRoom;
import io.kvferry.spi.NativeMemory;
import io.netty.util.internal.PlatformDependent;

/**
 * The pieces staged rooms move, as kvferry cuts its blocks: per rank pair, a piece for each run of pages adjacent on
 * both sides ({@link StagedRoom#pageRuns}) in one layer buffer, from prefill rank {@code r} of the room's DP group to decode rank {@code r} (equal
 * TP sizes: each pair holds the same heads), room after room. The pumps move these pieces with less work than
 * kvferry, from and to where they lie.
 *
 * @param pieces per rank pair, (source address, destination address, length) triples
 * @param roomStarts per rank pair, the index of each room's first piece, and the piece count last
 */
record RoomPieces(long[][] pieces, int[][] roomStarts) {

	/** The pieces of {@code rooms}, staged in {@code cluster}, where their pages lie. */
	static RoomPieces of(KVCluster cluster, List<StagedRoom> rooms) {
		List<RankMemory> decode = cluster.decodeMemory();
		int pairs = decode.size();
		long[][] pieces = new long[pairs][];
		int[][] roomStarts = new int[pairs][rooms.size() + 1];
		for (int r = 0; r < pairs; r++) {
			LongList triples = new LongList();
			for (int i = 0; i < rooms.size(); i++) {
				StagedRoom room = rooms.get(i);
				roomStarts[r][i] = triples.size / 3;
				List<MemoryRegion> from = cluster.prefillMemory().get(cluster.dpGroup(room.room())).get(r).kvArgs()
						.kvRegions();
				List<MemoryRegion> to = decode.get(r).kvArgs().kvRegions();
				int[] src = room.sourcePages();
				int[] dst = room.destinationPages();
				int skip = room.prefixPages();
				int[] runs = room.pageRuns();
				for (int b = 0; b < to.size(); b++) {
					MemoryRegion s = from.get(b);
					MemoryRegion d = to.get(b);
					int k = 0;
					for (int run : runs) {
						triples.add(s.itemAddress(src[skip + k]), d.itemAddress(dst[k]), (long) run * d.itemLen());
						k += run;
					}
				}
			}
			roomStarts[r][rooms.size()] = triples.size / 3;
			pieces[r] = triples.toArray();
		}
		return new RoomPieces(pieces, roomStarts);
	}

	/** @return the rank pairs */
	int pairs() {
		return pieces.length;
	}

	/** @return pieces over all rank pairs */
	int count() {
		int n = 0;
		for (long[] p : pieces) {
			n += p.length / 3;
		}
		return n;
	}

	/** @return payload bytes over all rank pairs */
	long bytes() {
		long n = 0;
		for (long[] p : pieces) {
			for (int i = 2; i < p.length; i += 3) {
				n += p[i];
			}
		}
		return n;
	}

	/** @return piece {@code i} of rank pair {@code pair} as a view of its source ({@code true}) or destination */
	ByteBuffer view(int pair, int i, boolean source) {
		long[] p = pieces[pair];
		return NativeMemory.byteBuffer(p[3 * i + (source ? 0 : 1)], (int) p[3 * i + 2]);
	}

	/**
	 * The same pieces laid out one after another, rank pair after rank pair, from {@code srcAddress} to the same
	 * offsets from {@code dstAddress}: the contiguous layout of the frame pump.
	 */
	RoomPieces laidOut(long srcAddress, long dstAddress) {
		long[][] laid = new long[pieces.length][];
		long offset = 0;
		for (int r = 0; r < pieces.length; r++) {
			laid[r] = new long[pieces[r].length];
			for (int i = 0; i < pieces[r].length; i += 3) {
				laid[r][i] = srcAddress + offset;
				laid[r][i + 1] = dstAddress + offset;
				laid[r][i + 2] = pieces[r][i + 2];
				offset += pieces[r][i + 2];
			}
		}
		return new RoomPieces(laid, roomStarts);
	}

	/** Zeroes every destination piece, so that a check after a run proves the run wrote it. */
	void clearDestinations() {
		for (long[] p : pieces) {
			for (int i = 0; i < p.length; i += 3) {
				PlatformDependent.setMemory(p[i + 1], p[i + 2], (byte) 0);
			}
		}
	}

	/** @return whether every destination piece holds its source's bytes */
	boolean landed() {
		for (int r = 0; r < pieces.length; r++) {
			for (int i = 0; i < pieces[r].length / 3; i++) {
				if (!view(r, i, true).equals(view(r, i, false))) {
					return false;
				}
			}
		}
		return true;
	}

	/** Longs appended without a box each. */
	private static final class LongList {
		private long[] values = new long[3 * 64];
		private int size;

		void add(long a, long b, long c) {
			if (size + 3 > values.length) {
				values = Arrays.copyOf(values, 2 * values.length);
			}
			values[size++] = a;
			values[size++] = b;
			values[size++] = c;
		}

		long[] toArray() {
			return Arrays.copyOf(values, size);
		}
	}
}
