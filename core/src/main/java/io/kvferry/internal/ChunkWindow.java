package io.kvferry.internal;

import io.kvferry.ParallelLayout;
import io.kvferry.internal.topology.CpSplit;

/**
 * Which pages of one chunk a prefill rank sends to one destination, and where they land. The engine passes every page
 * of the room; pages of the prefix decode already holds are skipped (decode's destinations start after it), and with
 * all-CP-ranks transfer this CP rank sends only its share of the rest: the pages after the prefix split into CP-size
 * contiguous ranges, the first {@code rest mod cp} ranks one page more.
 *
 * @param from first chunk position sent
 * @param to one past the last chunk position sent ({@code from == to}: nothing)
 * @param dstFrom the destination list position the first sent page lands at
 */
record ChunkWindow(int from, int to, int dstFrom) {

	/**
	 * @param chunkOffset the chunk's first page, as a position in the room
	 * @param chunkLen the chunk's pages
	 * @param numPages the room's pages
	 * @param prefixPages pages decode already holds (at most {@code numPages})
	 * @param own this rank's layout
	 * @param cpShare whether each CP rank sends only its share
	 */
	static ChunkWindow of(int chunkOffset, int chunkLen, int numPages, int prefixPages, ParallelLayout own,
			boolean cpShare) {
		int lo = prefixPages;
		int hi = numPages;
		if (cpShare && own.attnCpSize() > 1) {
			int[] share = CpSplit.range(numPages - prefixPages, own.attnCpSize(), own.attnCpRank());
			lo = prefixPages + share[0];
			hi = prefixPages + share[1];
		}
		int a = Math.max(chunkOffset, lo);
		int b = Math.min(chunkOffset + chunkLen, hi);
		if (a >= b) {
			return new ChunkWindow(0, 0, 0);
		}
		return new ChunkWindow(a - chunkOffset, b - chunkOffset, a - prefixPages);
	}

	/** @return pages sent */
	int length() {
		return to - from;
	}
}
