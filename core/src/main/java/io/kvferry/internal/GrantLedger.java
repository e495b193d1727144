package io.kvferry.internal;

import java.util.Arrays;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
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
 * <p><b>Bounded by the room's items.</b> Each buffer keeps its own {@link BufferLedger}: a bit per granted item written
 * whole, and runs of equally written bytes only for an item written in parts, at most a fixed number per item. That
 * number comes from the decode rank's own layout, not from what a peer sends: one run per head of a token in a KV page
 * (the smallest piece any plan cuts: head slices, re-paged tokens), two per prefill rank in an aux row or state slot
 * (each writes one slice), and {@link #SPARE_RUNS} for the cuts senders make at frame and stripe boundaries. A peer
 * that cuts an item finer fails the room as a protocol error, so a room's bookkeeping never exceeds a constant times
 * its items however the peer chunks its writes ({@link #retainedBytes}).
 *
 * <p>Thread-safe. The grant is immutable; recording a write takes only its buffer's monitor (held for one header's
 * items, never while calling out), so the connections' threads never take the room's, and writes into different
 * buffers never wait for each other. Counting what landed is lock-free.
 *
 * <p><b>Landed pages.</b> A write's bytes are also counted per KV item once its whole payload landed
 * ({@link #landedWrite}). As no byte is written more than {@code k} times and only accepted writes land, an item whose
 * count reached {@code k × item length} holds every byte of it exactly {@code k} times: that is when a failed room
 * reports the page landed in that buffer ({@link #landedItem}). An item of a buffer the room fills nothing in never
 * counts as landed: no byte reached it.
 */
final class GrantLedger {

	/** Runs an item written in parts may keep beyond those its layout explains: senders' cuts at frame boundaries. */
	static final int SPARE_RUNS = 32;

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
	 * @param kvPieces the most pieces the room's writers cut a KV page into: one per head of each of its tokens
	 * @param writers the prefill ranks that write the room (each cuts at most one slice of an aux row or state slot)
	 * @return the room's grant and ledger, nothing written yet
	 */
	static GrantLedger of(KVArgs args, int[] pages, int auxRow, int[][] slotsPerRegion, int[] kvTimes, int auxTimes,
			int[] stateTimes, int kvPieces, int writers) {
		GrantLedger l = new GrantLedger();
		int[][] kvItems = new int[args.kvRegions().size()][];
		// One sorted array serves every KV buffer: the room's pages are the same in each.
		Arrays.fill(kvItems, sortedDistinct(pages));
		int sliceRuns = 2 * Math.max(1, writers) + 1 + SPARE_RUNS;
		l.sections[RegionKind.KV.ordinal()] = new Section(RegionKind.KV, args.kvRegions(), kvItems, kvTimes,
				Math.max(1, kvPieces) + 1 + SPARE_RUNS);
		int[][] auxItems = new int[args.auxRegions().size()][];
		Arrays.fill(auxItems, auxRow < 0 ? new int[0] : new int[] { auxRow });
		int[] aux = new int[auxItems.length];
		Arrays.fill(aux, auxTimes);
		l.sections[RegionKind.AUX.ordinal()] = new Section(RegionKind.AUX, args.auxRegions(), auxItems, aux,
				sliceRuns);
		int[][] stateItems = new int[args.stateRegions().size()][];
		for (int i = 0; i < stateItems.length; i++) {
			stateItems[i] = i < slotsPerRegion.length ? sortedDistinct(slotsPerRegion[i]) : new int[0];
		}
		l.sections[RegionKind.STATE.ordinal()] = new Section(RegionKind.STATE, args.stateRegions(), stateItems,
				stateTimes, sliceRuns);
		return l;
	}

	/**
	 * As the full {@link #of}, with pieces of KV pages no smaller than one head of one token of this rank's layout and
	 * as many writers as the largest multiplicity.
	 */
	static GrantLedger of(KVArgs args, int[] pages, int auxRow, int[][] slotsPerRegion, int[] kvTimes, int auxTimes,
			int[] stateTimes) {
		int writers = Math.max(1, auxTimes);
		for (int t : kvTimes) {
			writers = Math.max(writers, t);
		}
		for (int t : stateTimes) {
			writers = Math.max(writers, t);
		}
		return of(args, pages, auxRow, slotsPerRegion, kvTimes, auxTimes, stateTimes,
				args.pageSize() * args.kvHeadNum(), writers);
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
	 * @throws WriteRefused naming the first field or item that is not allowed
	 */
	long destination(DataHeader h) {
		return destination(h.kind(), h.region(), h.dstOffset(), h.chunkLen(), h.dstStride(), h.count());
	}

	/**
	 * Checks a write of {@code count} chunks of {@code chunkLen} bytes, {@code dstStride} apart from byte
	 * {@code offset} of a region, against the grant; records nothing. The fields of a data header, apart, so that a
	 * scatter frame's pieces are checked without a header object each.
	 *
	 * @return the address of the write's first destination byte
	 * @throws WriteRefused naming the first field or item that is not allowed
	 */
	long destination(RegionKind kind, int region, long offset, int chunkLen, long dstStride, int count) {
		Section s = sections[kind.ordinal()];
		if (region < 0 || region >= s.regions.size()) {
			throw new WriteRefused("no " + kind + " region " + region + " (this rank registered " + s.regions.size()
					+ ")");
		}
		MemoryRegion memory = s.regions.get(region);
		if (chunkLen < 1 || count < 1) {
			throw new WriteRefused("malformed block " + block(kind, region, offset, chunkLen, dstStride, count)
					+ " (expected: chunkLen and count >= 1)");
		}
		if (count > 1 && dstStride < chunkLen) {
			throw new WriteRefused("malformed block " + block(kind, region, offset, chunkLen, dstStride, count)
					+ " (expected: dstStride >= chunkLen, chunks must not overlap)");
		}
		long end = end(offset, chunkLen, dstStride, count);
		if (offset < 0 || end < 0 || end > memory.length()) {
			throw new WriteRefused("bytes [" + offset + ", " + (end < 0 ? "beyond 2^63" : end) + ") outside " + kind
					+ " region " + region + " of " + memory.length() + " bytes");
		}
		int[] granted = s.items[region];
		BufferLedger buffer = s.buffers[region];
		long itemLen = memory.itemLen();
		if (count == 1 || dstStride <= itemLen) {
			// Chunk starts at most one item apart touch every item from the first byte's to the last byte's.
			checkItems(kind, region, granted, buffer, offset / itemLen, (end - 1) / itemLen);
		}
		else {
			// Sparse chunks: at most one per item, so at most itemCount of them fit in the region (checked above).
			for (int i = 0; i < count; i++) {
				long start = offset + i * dstStride;
				checkItems(kind, region, granted, buffer, start / itemLen, (start + chunkLen - 1) / itemLen);
			}
		}
		return memory.address() + offset;
	}

	private static String block(RegionKind kind, int region, long offset, int chunkLen, long dstStride, int count) {
		return "[" + kind + " region " + region + ", offset " + offset + ", chunkLen " + chunkLen + ", dstStride "
				+ dstStride + ", count " + count + "]";
	}

	/** @return one past the write's last destination byte, or -1 when that overflows 64 bits */
	private static long end(long offset, int chunkLen, long dstStride, int count) {
		try {
			return Math.addExact(Math.addExact(offset, Math.multiplyExact(count - 1L, dstStride)), chunkLen);
		}
		catch (ArithmeticException e) {
			return -1;
		}
	}

	private static void checkItems(RegionKind kind, int region, int[] granted, BufferLedger buffer, long first,
			long last) {
		int at = buffer.find(first);
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
		throw new WriteRefused(kind + " item " + missing + " of region " + region + " was not asked for");
	}

	/**
	 * Records a write that {@link #destination} accepted (its bytes lie in the room's items), under its buffer's
	 * monitor only.
	 *
	 * @throws WriteRefused when it would write a byte more often than the plan allows, or cut an item into more runs than
	 *         the ledger keeps; pieces of the header before the refused one stay recorded, which does not matter: a
	 *         refusal fails the room
	 */
	void reserve(DataHeader h) {
		reserve(h.kind(), h.region(), h.dstOffset(), h.chunkLen(), stride(h), h.count());
	}

	/**
	 * {@link #reserve(DataHeader)} of a write given by its fields, {@code stride} apart as {@link #stride} says.
	 */
	void reserve(RegionKind kind, int region, long offset, int chunkLen, long stride, int count) {
		buffer(kind, region).reserve(offset, chunkLen, stride, count);
	}

	/** @return how far apart the header's chunks start: its stride, or its chunk length when it has one chunk */
	static long stride(DataHeader h) {
		return stride(h.chunkLen(), h.dstStride(), h.count());
	}

	/** @return how far apart a write's chunks start: {@code dstStride}, or {@code chunkLen} when it has one chunk */
	static long stride(int chunkLen, long dstStride, int count) {
		return count == 1 ? chunkLen : dstStride;
	}

	private BufferLedger buffer(RegionKind kind, int region) {
		return sections[kind.ordinal()].buffers[region];
	}

	/**
	 * Counts {@code n} bytes of an accepted write that landed; lock-free.
	 *
	 * @return whether they completed the buffer: it now holds every byte the room expects there (true once at most,
	 *         since no write past the expectation is accepted)
	 */
	boolean landed(RegionKind kind, int region, long n) {
		return buffer(kind, region).landed(n);
	}

	/**
	 * Counts, per KV item, the bytes of an accepted write whose payload landed whole; lock-free. Called once per
	 * write, after {@link #landed(RegionKind, int, long)} counted its bytes for the buffer.
	 */
	void landedWrite(DataHeader h) {
		landedWrite(h.kind(), h.region(), h.dstOffset(), h.chunkLen(), stride(h), h.count());
	}

	/** {@link #landedWrite(DataHeader)} of a write given by its fields, as {@link #reserve} takes them. */
	void landedWrite(RegionKind kind, int region, long offset, int chunkLen, long stride, int count) {
		buffer(kind, region).landedWrite(offset, chunkLen, stride, count);
	}

	/**
	 * @param region a KV buffer
	 * @param page a destination page
	 * @return whether every byte of the page in that buffer landed as often as the plan writes it; false for a page
	 *         the room did not grant, and for a buffer the room fills nothing in (no byte landed there)
	 */
	boolean landedItem(int region, int page) {
		return buffer(RegionKind.KV, region).landedItem(page);
	}

	/** @return bytes landed so far in the buffer */
	long landed(RegionKind kind, int region) {
		return buffer(kind, region).landed();
	}

	/** @return bytes the buffer must receive for the room: {@code k ×} its granted bytes */
	long expected(RegionKind kind, int region) {
		return buffer(kind, region).expected();
	}

	/** @return how many times each granted byte of the buffer is written; 0 when the room fills nothing there */
	int times(RegionKind kind, int region) {
		return buffer(kind, region).times();
	}

	/**
	 * @return null when every granted byte landed exactly as often as the plan says; else what is missing, naming the
	 *         buffer, the first incomplete items and the byte counts
	 */
	String incomplete() {
		for (Section s : sections) {
			for (BufferLedger b : s.buffers) {
				String missing = b.incomplete(SHOWN);
				if (missing != null) {
					return missing;
				}
			}
		}
		return null;
	}

	/**
	 * @return heap bytes the room's buffers' ledgers hold now (the granted item lists, which the room's request holds
	 *         anyway, not counted): what a peer's chunking could grow, bounded by a constant times the room's items
	 */
	long retainedBytes() {
		long bytes = 0;
		for (Section s : sections) {
			for (BufferLedger b : s.buffers) {
				bytes += b.retainedBytes();
			}
		}
		return bytes;
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

	/** One kind of buffer: its regions, the items granted in each, and each buffer's ledger. */
	private static final class Section {

		final List<MemoryRegion> regions;
		// Per region, the granted items: sorted and distinct.
		final int[][] items;
		final BufferLedger[] buffers;

		Section(RegionKind kind, List<MemoryRegion> regions, int[][] items, int[] times, int maxRuns) {
			this.regions = regions;
			this.items = items;
			this.buffers = new BufferLedger[regions.size()];
			for (int r = 0; r < buffers.length; r++) {
				buffers[r] = new BufferLedger(kind, r, regions.get(r).itemLen(), items[r], times[r], maxRuns);
			}
		}
	}

}
