package io.kvferry.internal;

import java.util.Arrays;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;

/**
 * Which bytes of a decode rank's registered memory one room lets prefill write: the room's destination pages in every
 * KV region, its aux row in every aux region, its state slots in every state region.
 *
 * <p>This is the one place where a data header becomes an address. Every header field that takes part in one (kind,
 * region, offset, chunk length, stride, count) is checked here with exact 64-bit arithmetic before any byte of the
 * payload is written; a header is accepted only if every byte it would write lies inside the region and in an item the
 * room was granted. Landing reads need no check of their own: a landing zone is only offered inside a payload whose
 * header this object accepted, and never past that payload's end.
 *
 * <p>Immutable and thread-safe.
 */
final class WriteGrant {

	private final KVArgs args;
	private final int[] pages;
	private final int[] auxRows;
	private final int[][] slots;

	private WriteGrant(KVArgs args, int[] pages, int[] auxRows, int[][] slots) {
		this.args = args;
		this.pages = pages;
		this.auxRows = auxRows;
		this.slots = slots;
	}

	/**
	 * @param args the decode rank's registered memory
	 * @param pages the room's destination pages (any order, duplicates allowed)
	 * @param auxRow the room's aux row, or -1 for none
	 * @param stateSlots the room's state slots
	 * @return the grant
	 */
	static WriteGrant of(KVArgs args, int[] pages, int auxRow, int[] stateSlots) {
		int[][] all = new int[args.stateRegions().size()][];
		Arrays.fill(all, stateSlots);
		return of(args, pages, auxRow, all);
	}

	/**
	 * @param args the decode rank's registered memory
	 * @param pages the room's destination pages (any order, duplicates allowed)
	 * @param auxRow the room's aux row, or -1 for none
	 * @param slotsPerRegion the room's slots (or state pages) in each state region, in region order
	 * @return the grant
	 */
	static WriteGrant of(KVArgs args, int[] pages, int auxRow, int[][] slotsPerRegion) {
		int[][] slots = new int[slotsPerRegion.length][];
		for (int i = 0; i < slots.length; i++) {
			slots[i] = sortedDistinct(slotsPerRegion[i]);
		}
		return new WriteGrant(args, sortedDistinct(pages), auxRow < 0 ? new int[0] : new int[] { auxRow }, slots);
	}

	/**
	 * Checks a data header against the grant.
	 *
	 * @param h the header as the peer sent it
	 * @return the address of the header's first destination byte
	 * @throws Refused naming the first field or item that is not allowed
	 */
	long destination(DataHeader h) {
		List<MemoryRegion> regions = regions(h.kind());
		if (h.region() < 0 || h.region() >= regions.size()) {
			throw new Refused("no " + h.kind() + " region " + h.region() + " (this rank registered " + regions.size()
					+ ")");
		}
		MemoryRegion region = regions.get(h.region());
		if (h.chunkLen() < 1 || h.count() < 1) {
			throw new Refused("malformed block " + h + " (expected: chunkLen and count >= 1)");
		}
		if (h.count() > 1 && h.dstStride() < h.chunkLen()) {
			throw new Refused("malformed block " + h + " (expected: dstStride >= chunkLen, chunks must not overlap)");
		}
		long offset = h.dstOffset();
		long end = end(h);
		if (offset < 0 || end < 0 || end > region.length()) {
			throw new Refused("bytes [" + offset + ", " + (end < 0 ? "beyond 2^63" : end) + ") outside " + h.kind()
					+ " region " + h.region() + " of " + region.length() + " bytes");
		}
		int[] granted = granted(h.kind(), h.region());
		long itemLen = region.itemLen();
		if (h.count() == 1 || h.dstStride() <= itemLen) {
			// Chunk starts at most one item apart touch every item from the first byte's to the last byte's.
			checkItems(h, granted, offset / itemLen, (end - 1) / itemLen);
		}
		else {
			// Sparse chunks: at most one per item, so at most itemCount of them fit in the region (checked above).
			for (int i = 0; i < h.count(); i++) {
				long start = offset + i * h.dstStride();
				checkItems(h, granted, start / itemLen, (start + h.chunkLen() - 1) / itemLen);
			}
		}
		return region.address() + offset;
	}

	/** @return one past the header's last destination byte, or -1 when that overflows 64 bits */
	private static long end(DataHeader h) {
		try {
			return Math.addExact(Math.addExact(h.dstOffset(), Math.multiplyExact(h.count() - 1L, h.dstStride())),
					h.chunkLen());
		}
		catch (ArithmeticException e) {
			return -1;
		}
	}

	private static void checkItems(DataHeader h, int[] granted, long first, long last) {
		int at = first > Integer.MAX_VALUE ? -1 : Arrays.binarySearch(granted, (int) first);
		long span = last - first;
		if (at >= 0 && span < granted.length - at && granted[at + (int) span] == last) {
			// Sorted and distinct: the granted items from first on are consecutive up to last.
			return;
		}
		long missing = first;
		if (at >= 0) {
			while (at < granted.length && granted[at] == missing) {
				at++;
				missing++;
			}
		}
		throw new Refused(h.kind() + " item " + missing + " of region " + h.region() + " was not asked for");
	}

	private List<MemoryRegion> regions(RegionKind kind) {
		switch (kind) {
			case KV:
				return args.kvRegions();
			case AUX:
				return args.auxRegions();
			default:
				return args.stateRegions();
		}
	}

	private int[] granted(RegionKind kind, int region) {
		switch (kind) {
			case KV:
				return pages;
			case AUX:
				return auxRows;
			default:
				return region < slots.length ? slots[region] : new int[0];
		}
	}

	private static int[] sortedDistinct(int[] values) {
		// A loop, not a stream: this runs once per room on the caller's thread, before the room's request goes out.
		int[] sorted = values.clone();
		Arrays.sort(sorted);
		int n = 0;
		for (int v : sorted) {
			if (n == 0 || v != sorted[n - 1]) {
				sorted[n++] = v;
			}
		}
		return n == sorted.length ? sorted : Arrays.copyOf(sorted, n);
	}

	/** A write the grant does not allow; its message names the field or item. Stackless: the reason says it all. */
	static final class Refused extends ProtocolException {

		private static final long serialVersionUID = 1L;

		Refused(String reason) {
			super(reason);
		}

		@Override
		public synchronized Throwable fillInStackTrace() {
			return this;
		}
	}
}
