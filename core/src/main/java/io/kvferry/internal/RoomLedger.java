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
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;

/**
 * Decode's own record of one room: every item it granted (each destination page of each KV buffer, its aux row in each
 * aux buffer, its slots in each state buffer), how many times each byte of it must be written, and what was written.
 * The room's verdict comes from here alone; what prefill reports is only a cross-check.
 *
 * <p>Each buffer has a multiplicity {@code k}: how many prefill ranks write every granted byte of it (1 for KV pages
 * and for any byte one rank owns; more where the plan has ranks write the same bytes, as every prefill rank of a
 * decode rank sends the aux row). A write is recorded when its header is accepted, before any payload byte lands, and
 * is refused when it would write any byte more than {@code k} times. Bytes are also counted as they land. Success is
 * allowed only when every buffer's landed bytes equal {@code k × granted bytes}: as no byte may exceed {@code k}, that
 * sum is reached only when every granted byte was written exactly {@code k} times, whatever the order, the connections
 * or the split into frames.
 *
 * <p>{@link #reserve} is called under the room's monitor; {@link #landed} is lock-free, from the connections' threads.
 * Whole-item writes cost one counter per item; a write that covers part of an item (a head slice) keeps that item's
 * coverage as counted byte ranges.
 */
final class RoomLedger {

	private static final int SHOWN = 8;

	private final Section[] sections = new Section[RegionKind.values().length];

	private RoomLedger() {
	}

	/**
	 * @param args the decode rank's registered memory
	 * @param pages the room's destination pages (distinct)
	 * @param auxRow the room's aux row, or -1 for none
	 * @param slotsPerRegion the room's slots in each state region (distinct within a region)
	 * @param kvTimes per KV buffer, how many times each granted byte is written (0: the room fills nothing there)
	 * @param auxTimes how many times each byte of the aux row is written, in every aux buffer
	 * @param stateTimes per state buffer, how many times each granted byte is written
	 * @return the ledger, nothing written yet
	 */
	static RoomLedger of(KVArgs args, int[] pages, int auxRow, int[][] slotsPerRegion, int[] kvTimes, int auxTimes,
			int[] stateTimes) {
		RoomLedger l = new RoomLedger();
		int[][] kvItems = new int[args.kvRegions().size()][];
		Arrays.fill(kvItems, sorted(pages));
		l.sections[RegionKind.KV.ordinal()] = new Section(RegionKind.KV, args.kvRegions(), kvItems, kvTimes);
		int[][] auxItems = new int[args.auxRegions().size()][];
		Arrays.fill(auxItems, auxRow < 0 ? new int[0] : new int[] { auxRow });
		int[] aux = new int[auxItems.length];
		Arrays.fill(aux, auxTimes);
		l.sections[RegionKind.AUX.ordinal()] = new Section(RegionKind.AUX, args.auxRegions(), auxItems, aux);
		int[][] stateItems = new int[args.stateRegions().size()][];
		for (int i = 0; i < stateItems.length; i++) {
			stateItems[i] = i < slotsPerRegion.length ? sorted(slotsPerRegion[i]) : new int[0];
		}
		l.sections[RegionKind.STATE.ordinal()] = new Section(RegionKind.STATE, args.stateRegions(), stateItems,
				stateTimes);
		return l;
	}

	private static int[] sorted(int[] values) {
		int[] s = values.clone();
		Arrays.sort(s);
		return s;
	}

	/**
	 * Records a write the room's grant already accepted (its bytes lie in the room's items).
	 *
	 * @throws WriteGrant.Refused when it would write a byte more often than the plan allows; pieces of the header
	 *         before the refused one stay recorded, which does not matter: a refusal fails the room
	 */
	void reserve(DataHeader h) {
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
	String incomplete() {
		for (Section s : sections) {
			String missing = s.incomplete();
			if (missing != null) {
				return missing;
			}
		}
		return null;
	}

	/** One kind of buffer: its regions, the items granted in each, and what was written. */
	private static final class Section {

		final RegionKind kind;
		final List<MemoryRegion> regions;
		final int[][] items;
		final int[] times;
		final long[] expected;
		final AtomicLongArray landed;
		// Per region and granted item (by position in items): whole-item writes recorded. Guarded by the room.
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
			for (int r = 0; r < regions.size(); r++) {
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
				throw new WriteGrant.Refused(kind + " buffer " + r + " receives nothing for this room (no prefill rank "
						+ "the room asked fills it)");
			}
			for (long item = start / len; item * len < end; item++) {
				int at = Arrays.binarySearch(items[r], (int) item);
				if (at < 0) {
					throw new WriteGrant.Refused(kind + " item " + item + " of region " + r + " was not asked for");
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

		private WriteGrant.Refused twice(int r, long item, long from, long to) {
			return new WriteGrant.Refused(kind + " item " + item + " of region " + r + ": bytes [" + from + ", " + to
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

		/** @return bytes written into one item, counting each write; under the room's monitor */
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
}
