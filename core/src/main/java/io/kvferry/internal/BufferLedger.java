package io.kvferry.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import io.kvferry.spi.RegionKind;

/**
 * Decode's ledger of one buffer of one room: how many times each byte of each granted item was written by the writes
 * the room accepted, and what landed of them. A write is recorded ({@link #reserve}) when its header is accepted,
 * before any byte of its payload lands, and refused when it would write a byte more than {@code times} times.
 *
 * <p><b>Bounded by the items, not by the peer's chunking.</b> An item written whole costs one bit (one count where
 * each byte is written more than once). An item written in parts keeps {@link ItemRuns}: runs of bytes written
 * equally often, at most {@code maxRuns} of them; a write that would leave more is refused, and an item whose bytes
 * are all written equally often again drops its runs. {@code maxRuns} is fixed per buffer from the decode rank's own
 * layout, above anything the plan's writers produce (see {@link GrantLedger}), so the buffer's bookkeeping never
 * exceeds a few words per item plus {@code maxRuns} runs for each item being written in parts, however small the
 * writes; {@link #retainedBytes} gives the figure.
 *
 * <p>Thread-safe. Recording and reading what was written take this object's monitor, one per buffer, held for one
 * header's items and never while calling out: writes into different buffers never wait for each other. Counting what
 * landed is lock-free.
 */
final class BufferLedger {

	private static final AtomicLongFieldUpdater<BufferLedger> LANDED = AtomicLongFieldUpdater
			.newUpdater(BufferLedger.class, "landed");
	private static final AtomicReferenceFieldUpdater<BufferLedger, AtomicLongArray> ITEM_BYTES =
			AtomicReferenceFieldUpdater.newUpdater(BufferLedger.class, AtomicLongArray.class, "itemBytes");

	// Shared by every buffer that keeps no such record: never written.
	private static final long[] NO_WORDS = new long[0];
	private static final int[] NO_COUNTS = new int[0];
	private static final long[] NO_LANDED = new long[0];
	// How many granted items after the hint find looks at before it searches.
	private static final int HINT_REACH = 4;
	// Atomic access to landedWhole's words: a plain array spares every KV buffer of every room a wrapper object.
	private static final VarHandle WORDS = MethodHandles.arrayElementVarHandle(long[].class);

	private final RegionKind kind;
	private final int region;
	private final int itemLen;
	// The granted items: sorted and distinct (shared with the other buffers of the kind; never written).
	private final int[] items;
	private final int times;
	private final int maxRuns;
	private final long expected;
	// Guarded by this: whole-item writes per granted item (by position in items), a bit each when times is 1.
	private final long[] wholeBits;
	private final int[] wholeCounts;
	// Guarded by this: per granted item, its runs while it is written in part; made on the buffer's first such write.
	private ItemRuns[] parts;
	// Guarded by this: why a write was refused; every later one is refused too, as the room fails.
	private String refused;
	// Bytes landed in the buffer.
	private volatile long landed;
	// Where the last look-up ended (see find); never trusted without comparing.
	private int hint;
	// Lock-free, KV buffers only (what a failed room reports as landed): per granted item, whether a write that covered
	// it whole landed (times 1), else the bytes landed in it; made on the first write that needs it.
	private final long[] landedWhole;
	private volatile AtomicLongArray itemBytes;

	/**
	 * @param kind the buffer's kind, for messages
	 * @param region the buffer's position among its kind's
	 * @param itemLen bytes of one item
	 * @param items the granted items, sorted and distinct
	 * @param times how many times each granted byte is written (0: the room fills nothing here)
	 * @param maxRuns runs an item written in parts may keep
	 */
	BufferLedger(RegionKind kind, int region, int itemLen, int[] items, int times, int maxRuns) {
		this.kind = kind;
		this.region = region;
		this.itemLen = itemLen;
		this.items = items;
		this.times = times;
		this.maxRuns = maxRuns;
		this.expected = (long) times * itemLen * items.length;
		int tracked = times == 0 ? 0 : items.length;
		this.wholeBits = times == 1 ? new long[words(tracked)] : NO_WORDS;
		this.wholeCounts = times > 1 ? new int[tracked] : NO_COUNTS;
		this.landedWhole = kind == RegionKind.KV && times == 1 ? new long[words(tracked)] : NO_LANDED;
	}

	private static int words(int bits) {
		return (bits + 63) >>> 6;
	}

	/** @return how many times each granted byte is written; 0 when the room fills nothing here */
	int times() {
		return times;
	}

	/** @return bytes the buffer must receive: {@code times ×} its granted bytes */
	long expected() {
		return expected;
	}

	/** @return bytes landed so far */
	long landed() {
		return landed;
	}

	/**
	 * Records a write the grant accepted: {@code count} chunks of {@code chunkLen} bytes, {@code stride} apart, from
	 * byte {@code offset} of the region, all inside granted items.
	 *
	 * @throws WriteRefused when a byte would be written more often than the plan allows, or an item would be
	 *         cut into more than {@code maxRuns} runs; chunks before the refused one stay recorded, which does not
	 *         matter: a refusal fails the room
	 */
	synchronized void reserve(long offset, int chunkLen, long stride, int count) {
		if (refused != null) {
			throw new WriteRefused(refused);
		}
		if (times == 0) {
			throw new WriteRefused(kind + " buffer " + region + " receives nothing for this room (no prefill "
					+ "rank the room asked fills it)");
		}
		try {
			walk(offset, chunkLen, stride, count, false);
		}
		catch (WriteRefused e) {
			// A refused write may leave an item cut into more runs than its bound: a write of the room that another
			// connection's thread records before the refusal failed the room must not build on that.
			refused = e.getMessage();
			throw e;
		}
	}

	/**
	 * Visits the items a write touches, each with the bytes of it the write covers: records them (under the monitor)
	 * or, {@code landing}, counts them as landed (lock-free).
	 */
	private void walk(long offset, int chunkLen, long stride, int count, boolean landing) {
		int at = -1;
		for (int c = 0; c < count; c++) {
			long start = offset + c * stride;
			long end = start + chunkLen;
			for (long item = start / itemLen; item * itemLen < end; item++) {
				at = position(at, item);
				if (at < 0) {
					throw new WriteRefused(kind + " item " + item + " of region " + region + " was not asked for");
				}
				long base = item * itemLen;
				int from = (int) (Math.max(start, base) - base);
				int to = (int) (Math.min(end, base + itemLen) - base);
				if (landing) {
					land(at, from, to);
				}
				else {
					record(at, item, from, to);
				}
			}
		}
	}

	/**
	 * @param last the position of the item looked up before, or -1
	 * @return the position of {@code item} among the granted items, negative when it is not granted
	 */
	private int position(int last, long item) {
		// A write's items are mostly the same as the chunk before or the next one granted: no search for them.
		if (last >= 0 && items[last] == item) {
			return last;
		}
		if (last >= 0 && last + 1 < items.length && items[last + 1] == item) {
			return last + 1;
		}
		return find(item);
	}

	/**
	 * @return the position of {@code item} among the granted items, negative when it is not granted; lock-free
	 */
	int find(long item) {
		// Pieces arrive in destination order, so the item of the next write is most often one of the few granted
		// after the last one found. The hint is a plain field that threads may see stale or overwrite: every
		// candidate is compared with the item, so a wrong hint costs only the search it would have saved.
		int h = hint;
		for (int at = h, end = Math.min(items.length, h + HINT_REACH); at < end; at++) {
			if (items[at] == item) {
				if (at != h) {
					hint = at;
				}
				return at;
			}
		}
		int at = item > Integer.MAX_VALUE ? -1 : Arrays.binarySearch(items, (int) item);
		if (at >= 0) {
			hint = at;
		}
		return at;
	}

	/** Records one write of bytes [from, to) of the item at position {@code at}; under the monitor. */
	private void record(int at, long item, int from, int to) {
		int whole = whole(at);
		ItemRuns runs = parts == null ? null : parts[at];
		if (runs == null && from == 0 && to == itemLen) {
			if (whole >= times) {
				throw twice(item, 0, itemLen);
			}
			addWhole(at, 1);
			return;
		}
		if (runs == null) {
			if (parts == null) {
				parts = new ItemRuns[items.length];
			}
			runs = new ItemRuns(itemLen, maxRuns);
			parts[at] = runs;
		}
		long full = runs.atLimit(from, to, times - whole);
		if (full >= 0) {
			throw twice(item, full >>> 32, full & 0xffffffffL);
		}
		runs.add(from, to);
		if (runs.runs() > maxRuns) {
			throw new WriteRefused(kind + " item " + item + " of region " + region + " was written in pieces "
					+ "that leave it cut into more than " + maxRuns + " runs (this decode rank keeps at most " + maxRuns
					+ " per item: the most its layout lets honest writers make)");
		}
		if (runs.runs() == 1) {
			// Every byte written equally often again: a count serves.
			addWhole(at, runs.uniformCount());
			parts[at] = null;
		}
	}

	private int whole(int at) {
		return times == 1 ? (int) (wholeBits[at >>> 6] >>> at & 1) : wholeCounts[at];
	}

	private void addWhole(int at, int n) {
		if (times == 1) {
			wholeBits[at >>> 6] |= 1L << at;
		}
		else {
			wholeCounts[at] += n;
		}
	}

	private WriteRefused twice(long item, long from, long to) {
		return new WriteRefused(kind + " item " + item + " of region " + region + ": bytes [" + from + ", " + to
				+ ") written " + (times == 1 ? "twice" : "more than " + times + " times") + " (each granted byte is "
				+ "written " + (times == 1 ? "once" : times + " times") + ")");
	}

	/**
	 * Counts {@code n} bytes of an accepted write that landed; lock-free.
	 *
	 * @return whether they completed the buffer (true once at most, since no write past the expectation is accepted)
	 */
	boolean landed(long n) {
		return n > 0 && LANDED.addAndGet(this, n) == expected;
	}

	/**
	 * Counts, per item, the bytes of an accepted write whose payload landed whole (KV buffers only); lock-free.
	 * Arguments as for {@link #reserve}.
	 */
	void landedWrite(long offset, int chunkLen, long stride, int count) {
		if (kind == RegionKind.KV && times > 0) {
			walk(offset, chunkLen, stride, count, true);
		}
	}

	/** Counts bytes [from, to) of the item at position {@code at} as landed; lock-free. */
	private void land(int at, int from, int to) {
		if (times == 1 && to - from == itemLen) {
			// Landed whole at once: as no byte is written twice, the item is complete.
			int word = at >>> 6;
			long bit = 1L << at;
			long w;
			do {
				w = (long) WORDS.getVolatile(landedWhole, word);
			}
			while ((w & bit) == 0 && !WORDS.compareAndSet(landedWhole, word, w, w | bit));
		}
		else {
			itemBytes().addAndGet(at, to - from);
		}
	}

	private AtomicLongArray itemBytes() {
		AtomicLongArray a = itemBytes;
		if (a == null) {
			ITEM_BYTES.compareAndSet(this, null, new AtomicLongArray(items.length));
			a = itemBytes;
		}
		return a;
	}

	/**
	 * @param item a granted item's index
	 * @return whether every byte of it landed as often as the plan writes it, counted from writes whose payload landed
	 *         whole (KV buffers only); false for a buffer the room fills nothing in (no byte landed there) and for an
	 *         item the room did not grant
	 */
	boolean landedItem(int item) {
		if (times == 0 || kind != RegionKind.KV) {
			return false;
		}
		int at = Arrays.binarySearch(items, item);
		if (at < 0) {
			return false;
		}
		if (times == 1 && ((long) WORDS.getVolatile(landedWhole, at >>> 6) & 1L << at) != 0) {
			return true;
		}
		AtomicLongArray a = itemBytes;
		return a != null && a.get(at) == (long) times * itemLen;
	}

	/**
	 * @param shown how many short items to name at most
	 * @return null when every granted byte landed as often as planned; else what is missing, naming the buffer, the
	 *         first short items and the byte counts
	 */
	synchronized String incomplete(int shown) {
		long got = landed;
		if (got == expected) {
			return null;
		}
		List<String> short_ = new ArrayList<>();
		int count = 0;
		long due = (long) times * itemLen;
		for (int at = 0; at < items.length; at++) {
			long covered = covered(at);
			if (covered < due) {
				if (short_.size() < shown) {
					short_.add(items[at] + " (" + covered + " of " + due + " bytes)");
				}
				count++;
			}
		}
		String which = count == 0 ? "every item was written, but not every byte has landed"
				: count + " of " + items.length + " granted items short: " + String.join(", ", short_)
						+ (count > short_.size() ? ", ..." : "");
		return kind + " buffer " + region + ": " + got + " of " + expected + " bytes landed; " + which;
	}

	/** @return bytes written into the item at position {@code at}, counting each write; under the monitor */
	private long covered(int at) {
		if (times == 0) {
			return 0;
		}
		ItemRuns runs = parts == null ? null : parts[at];
		return (long) whole(at) * itemLen + (runs == null ? 0 : runs.sum());
	}

	/**
	 * @return heap bytes this buffer's ledger holds now, by the arrays and objects it made (compressed references,
	 *         16-byte array and object headers): what the bound on a room's bookkeeping is measured in
	 */
	synchronized long retainedBytes() {
		long bytes = 64 + 16 + 8L * wholeBits.length + 16 + 4L * wholeCounts.length + 16 + 8L * landedWhole.length;
		AtomicLongArray a = itemBytes;
		if (a != null) {
			bytes += 32 + 8L * a.length();
		}
		if (parts != null) {
			bytes += 16 + 4L * parts.length;
			for (ItemRuns r : parts) {
				if (r != null) {
					bytes += 32 + r.arrayBytes();
				}
			}
		}
		return bytes;
	}
}
