package io.kvferry.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLongArray;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;

/**
 * Decode's own record of one room: the items it granted (each destination page of each KV buffer, its aux row in each
 * aux buffer, its slots in each state buffer), whether a data header may write where it says, how many times each
 * granted byte must be written, and what was written. The room's verdict comes from here alone; what prefill reports
 * is only a cross-check.
 *
 * <p><b>The grant.</b> {@link #destination} is the one place where a data header becomes an address. Every header
 * field that takes part in one (kind, region, offset, chunk length, stride, count) is checked with exact 64-bit
 * arithmetic before any byte of the payload is written; a header is accepted only if every byte it would write lies
 * inside the region and in a granted item. Landing reads need no check of their own: a landing zone is only offered
 * inside a payload whose header was accepted, and never past that payload's end.
 *
 * <p><b>The ledger.</b> Each buffer has a multiplicity {@code k}: how many prefill ranks write every granted byte of
 * it (1 for KV pages and for any byte one rank owns; more where the plan has ranks write the same bytes, as every
 * prefill rank of a decode rank sends the aux row). A write is recorded ({@link #reserve}) when its header is
 * accepted, before any payload byte lands, and is refused when it would write any byte more than {@code k} times.
 * Bytes are also counted as they land. Success is allowed only when every buffer's landed bytes equal
 * {@code k × granted bytes}: as no byte may exceed {@code k}, that sum is reached only when every granted byte was
 * written exactly {@code k} times, whatever the order, the connections or the split into frames.
 *
 * <p>Thread-safe. The grant is immutable and {@link #landed} is lock-free; recording a write and the final count take
 * this object's own monitor (held for one header's items, never while calling out), so the connections' threads never
 * take the room's. Whole-item writes cost one counter per item; a write that covers part of an item (a head slice)
 * keeps that item's coverage as counted byte ranges.
 *
 * <p><b>Landed pages.</b> A write's bytes are also counted per KV item once its whole payload landed
 * ({@link #landedWrite}). As no byte is written more than {@code k} times and only accepted writes land, an item whose
 * count reached {@code k × item length} holds every byte of it exactly {@code k} times: that is when a failed room
 * reports the page landed in that buffer ({@link #landedItem}).
 */
final class GrantLedger {

	private static final int SHOWN = 8;

	private final Section[] sections = new Section[RegionKind.values().length];

	private GrantLedger() {
	}

	/**
	 * @param args the decode rank's registered memory
	 * @param pages the room's destination pages (any order; a page listed twice is granted once)
	 * @param auxRow the room's aux row, or -1 for none
	 * @param slotsPerRegion the room's slots in each state region, in region order
	 * @param kvTimes per KV buffer, how many times each granted byte is written (0: the room fills nothing there)
	 * @param auxTimes how many times each byte of the aux row is written, in every aux buffer
	 * @param stateTimes per state buffer, how many times each granted byte is written
	 * @return the room's grant and ledger, nothing written yet
	 */
	static GrantLedger of(KVArgs args, int[] pages, int auxRow, int[][] slotsPerRegion, int[] kvTimes, int auxTimes,
			int[] stateTimes) {
		GrantLedger l = new GrantLedger();
		int[][] kvItems = new int[args.kvRegions().size()][];
		// One sorted array serves every KV buffer: the room's pages are the same in each.
		Arrays.fill(kvItems, sortedDistinct(pages));
		l.sections[RegionKind.KV.ordinal()] = new Section(RegionKind.KV, args.kvRegions(), kvItems, kvTimes);
		int[][] auxItems = new int[args.auxRegions().size()][];
		Arrays.fill(auxItems, auxRow < 0 ? new int[0] : new int[] { auxRow });
		int[] aux = new int[auxItems.length];
		Arrays.fill(aux, auxTimes);
		l.sections[RegionKind.AUX.ordinal()] = new Section(RegionKind.AUX, args.auxRegions(), auxItems, aux);
		int[][] stateItems = new int[args.stateRegions().size()][];
		for (int i = 0; i < stateItems.length; i++) {
			stateItems[i] = i < slotsPerRegion.length ? sortedDistinct(slotsPerRegion[i]) : new int[0];
		}
		l.sections[RegionKind.STATE.ordinal()] = new Section(RegionKind.STATE, args.stateRegions(), stateItems,
				stateTimes);
		return l;
	}

	/** @return a ledger of the given items where every granted byte is written once (the grant's checks alone) */
	static GrantLedger of(KVArgs args, int[] pages, int auxRow, int[][] slotsPerRegion) {
		int[] kv = new int[args.kvRegions().size()];
		Arrays.fill(kv, 1);
		int[] state = new int[args.stateRegions().size()];
		Arrays.fill(state, 1);
		return of(args, pages, auxRow, slotsPerRegion, kv, 1, state);
	}

	/** @return a ledger of the given items, the same slots in every state region, every granted byte written once */
	static GrantLedger of(KVArgs args, int[] pages, int auxRow, int[] stateSlots) {
		int[][] all = new int[args.stateRegions().size()][];
		Arrays.fill(all, stateSlots);
		return of(args, pages, auxRow, all);
	}

	/**
	 * Checks a data header against the grant; records nothing.
	 *
	 * @param h the header as the peer sent it
	 * @return the address of the header's first destination byte
	 * @throws Refused naming the first field or item that is not allowed
	 */
	long destination(DataHeader h) {
		Section s = sections[h.kind().ordinal()];
		if (h.region() < 0 || h.region() >= s.regions.size()) {
			throw new Refused("no " + h.kind() + " region " + h.region() + " (this rank registered " + s.regions.size()
					+ ")");
		}
		MemoryRegion region = s.regions.get(h.region());
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
		int[] granted = s.items[h.region()];
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

	/**
	 * Records a write that {@link #destination} accepted (its bytes lie in the room's items).
	 *
	 * @throws Refused when it would write a byte more often than the plan allows; pieces of the header before the
	 *         refused one stay recorded, which does not matter: a refusal fails the room
	 */
	synchronized void reserve(DataHeader h) {
		Section s = sections[h.kind().ordinal()];
		long stride = h.count() == 1 ? h.chunkLen() : h.dstStride();
		for (int i = 0; i < h.count(); i++) {
			long start = h.dstOffset() + i * stride;
			s.reserve(h, start, start + h.chunkLen());
		}
	}

	/**
	 * Counts {@code n} bytes of an accepted write that landed.
	 *
	 * @return whether they completed the buffer: it now holds every byte the room expects there (true once at most,
	 *         since no write past the expectation is accepted)
	 */
	boolean landed(RegionKind kind, int region, long n) {
		Section s = sections[kind.ordinal()];
		return n > 0 && s.landed.addAndGet(region, n) == s.expected[region];
	}

	/**
	 * Counts, per KV item, the bytes of an accepted write whose payload landed whole; lock-free. Called once per
	 * write, after {@link #landed(RegionKind, int, long)} counted its bytes for the buffer.
	 */
	void landedWrite(DataHeader h) {
		if (h.kind() != RegionKind.KV) {
			return;
		}
		Section s = sections[RegionKind.KV.ordinal()];
		int r = h.region();
		AtomicLongArray perItem = s.itemLanded[r];
		long len = s.regions.get(r).itemLen();
		long stride = h.count() == 1 ? h.chunkLen() : h.dstStride();
		for (int i = 0; i < h.count(); i++) {
			long start = h.dstOffset() + i * stride;
			long end = start + h.chunkLen();
			for (long item = start / len; item * len < end; item++) {
				int at = Arrays.binarySearch(s.items[r], (int) item);
				if (at >= 0) {
					long from = Math.max(start, item * len);
					long to = Math.min(end, (item + 1) * len);
					perItem.addAndGet(at, to - from);
				}
			}
		}
	}

	/**
	 * @param region a KV buffer
	 * @param page a destination page
	 * @return whether every byte of the page in that buffer landed as often as the plan writes it; true for a buffer
	 *         the room fills nothing in (nothing had to land there), false for a page the room did not grant
	 */
	boolean landedItem(int region, int page) {
		Section s = sections[RegionKind.KV.ordinal()];
		if (s.times[region] == 0) {
			return true;
		}
		int at = Arrays.binarySearch(s.items[region], page);
		return at >= 0 && s.itemLanded[region].get(at) == (long) s.times[region] * s.regions.get(region).itemLen();
	}

	/** @return bytes landed so far in the buffer */
	long landed(RegionKind kind, int region) {
		return sections[kind.ordinal()].landed.get(region);
	}

	/** @return bytes the buffer must receive for the room: {@code k ×} its granted bytes */
	long expected(RegionKind kind, int region) {
		return sections[kind.ordinal()].expected[region];
	}

	/** @return how many times each granted byte of the buffer is written; 0 when the room fills nothing there */
	int times(RegionKind kind, int region) {
		return sections[kind.ordinal()].times[region];
	}

	/**
	 * @return null when every granted byte landed exactly as often as the plan says; else what is missing, naming the
	 *         buffer, the first incomplete items and the byte counts
	 */
	synchronized String incomplete() {
		for (Section s : sections) {
			String missing = s.incomplete();
			if (missing != null) {
				return missing;
			}
		}
		return null;
	}

	private static int[] sortedDistinct(int[] values) {
		// A loop, not a stream: this runs once per room, before the room's request goes out.
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

	/** One kind of buffer: its regions, the items granted in each, and what was written. */
	private static final class Section {

		final RegionKind kind;
		final List<MemoryRegion> regions;
		// Per region, the granted items: sorted and distinct.
		final int[][] items;
		final int[] times;
		final long[] expected;
		final AtomicLongArray landed;
		// Per region and granted item (by position in items): bytes landed by writes whose payload landed whole.
		final AtomicLongArray[] itemLanded;
		// Per region and granted item (by position in items): whole-item writes recorded. Guarded by the ledger.
		final int[][] whole;
		// Items written in part, keyed by region and position: byte offset -> writes from there to the next key.
		final Map<Long, TreeMap<Integer, Integer>> partial = new HashMap<>();

		Section(RegionKind kind, List<MemoryRegion> regions, int[][] items, int[] times) {
			this.kind = kind;
			this.regions = regions;
			this.items = items;
			this.times = times;
			this.expected = new long[regions.size()];
			this.whole = new int[regions.size()][];
			this.itemLanded = new AtomicLongArray[regions.size()];
			for (int r = 0; r < regions.size(); r++) {
				// Only KV items are reported as landed; a buffer the room does not fill gets no counters.
				itemLanded[r] = new AtomicLongArray(kind != RegionKind.KV || times[r] == 0 ? 0 : items[r].length);
				expected[r] = (long) times[r] * regions.get(r).itemLen() * items[r].length;
				whole[r] = new int[times[r] == 0 ? 0 : items[r].length];
			}
			this.landed = new AtomicLongArray(regions.size());
		}

		/** Records bytes [start, end) of the region named by {@code h}, which the grant keeps inside granted items. */
		void reserve(DataHeader h, long start, long end) {
			int r = h.region();
			long len = regions.get(r).itemLen();
			if (times[r] == 0) {
				throw new Refused(kind + " buffer " + r + " receives nothing for this room (no prefill rank the room "
						+ "asked fills it)");
			}
			for (long item = start / len; item * len < end; item++) {
				int at = Arrays.binarySearch(items[r], (int) item);
				if (at < 0) {
					throw new Refused(kind + " item " + item + " of region " + r + " was not asked for");
				}
				long from = Math.max(start, item * len) - item * len;
				long to = Math.min(end, (item + 1) * len) - item * len;
				long key = (long) r << 32 | at;
				// Most rooms never write part of an item: skip the look-up (and its boxed key) for them.
				TreeMap<Integer, Integer> parts = partial.isEmpty() ? null : partial.get(key);
				if (from == 0 && to == len && parts == null) {
					if (whole[r][at] >= times[r]) {
						throw twice(r, item, 0, len);
					}
					whole[r][at]++;
					continue;
				}
				if (parts == null) {
					parts = new TreeMap<>();
					parts.put(0, 0);
					parts.put((int) len, 0);
					partial.put(key, parts);
				}
				add(parts, (int) from, (int) to, times[r] - whole[r][at], r, item);
			}
		}

		/** Adds one write of [from, to) to an item's counted ranges, refusing any byte already at {@code max}. */
		private void add(TreeMap<Integer, Integer> parts, int from, int to, int max, int r, long item) {
			for (Map.Entry<Integer, Integer> e = parts.floorEntry(from); e != null && e.getKey() < to;
					e = parts.higherEntry(e.getKey())) {
				// Each key from the floor of from on starts a range that overlaps [from, to).
				if (e.getValue() >= max) {
					throw twice(r, item, Math.max(from, e.getKey()), Math.min(to, parts.higherKey(e.getKey())));
				}
			}
			parts.putIfAbsent(from, parts.floorEntry(from).getValue());
			parts.putIfAbsent(to, parts.floorEntry(to).getValue());
			for (Map.Entry<Integer, Integer> e : parts.subMap(from, true, to, false).entrySet()) {
				e.setValue(e.getValue() + 1);
			}
		}

		private Refused twice(int r, long item, long from, long to) {
			return new Refused(kind + " item " + item + " of region " + r + ": bytes [" + from + ", " + to
					+ ") written " + (times[r] == 1 ? "twice" : "more than " + times[r] + " times")
					+ " (each granted byte is written " + (times[r] == 1 ? "once" : times[r] + " times") + ")");
		}

		String incomplete() {
			for (int r = 0; r < regions.size(); r++) {
				long got = landed.get(r);
				if (got == expected[r]) {
					continue;
				}
				long len = regions.get(r).itemLen();
				List<String> short_ = new ArrayList<>();
				int count = 0;
				for (int at = 0; at < items[r].length; at++) {
					long covered = covered(r, at, len);
					if (covered < times[r] * len) {
						if (short_.size() < SHOWN) {
							short_.add(items[r][at] + " (" + covered + " of " + times[r] * len + " bytes)");
						}
						count++;
					}
				}
				String which = count == 0 ? "every item was written, but not every byte has landed"
						: count + " of " + items[r].length + " granted items short: " + String.join(", ", short_)
								+ (count > short_.size() ? ", ..." : "");
				return kind + " buffer " + r + ": " + got + " of " + expected[r] + " bytes landed; " + which;
			}
			return null;
		}

		/** @return bytes written into one item, counting each write */
		private long covered(int r, int at, long len) {
			long total = whole[r].length == 0 ? 0 : whole[r][at] * len;
			TreeMap<Integer, Integer> parts = partial.get((long) r << 32 | at);
			if (parts != null) {
				Integer prev = null;
				for (Map.Entry<Integer, Integer> e : parts.entrySet()) {
					if (prev != null) {
						total += (long) parts.get(prev) * (e.getKey() - prev);
					}
					prev = e.getKey();
				}
			}
			return total;
		}
	}

	/** A write the grant or the ledger does not allow; its message names the field or item. Stackless. */
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
