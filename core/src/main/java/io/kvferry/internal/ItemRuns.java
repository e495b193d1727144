package io.kvferry.internal;

import java.util.Arrays;

/**
 * How often each byte of one item was written, for an item written in parts: runs of bytes written equally often, in
 * byte order, adjacent runs always with different counts (so a run list is as short as the coverage allows: one run
 * once every byte was written equally often). Two int arrays of at most {@code maxRuns + 2} entries, grown as runs
 * appear; nothing is allocated per write. Not thread-safe: its {@link BufferLedger} guards it.
 */
final class ItemRuns {

	private final int length;
	private final int capacity;
	// Run i covers [starts[i], starts[i + 1]) (the last one up to length), written counts[i] times; starts[0] is 0.
	private int[] starts;
	private int[] counts;
	private int n;

	/**
	 * @param length the item's bytes
	 * @param maxRuns the most runs the item may keep after a write (its owner refuses a write that leaves more)
	 */
	ItemRuns(int length, int maxRuns) {
		this.length = length;
		// A write adds at most two runs before its owner checks the count.
		this.capacity = maxRuns + 2;
		int initial = Math.min(4, capacity);
		this.starts = new int[initial];
		this.counts = new int[initial];
		this.n = 1;
	}

	/** @return the runs: 1 once every byte was written equally often */
	int runs() {
		return n;
	}

	/** @return how often every byte was written, when {@link #runs()} is 1 */
	int uniformCount() {
		return counts[0];
	}

	/**
	 * @return the first bytes in [from, to) already written {@code limit} times or more, as {@code start << 32 | end},
	 *         or -1 when there are none
	 */
	long atLimit(int from, int to, int limit) {
		for (int r = floor(from); r < n && starts[r] < to; r++) {
			if (counts[r] >= limit) {
				return (long) Math.max(from, starts[r]) << 32 | Math.min(to, end(r));
			}
		}
		return -1;
	}

	/** Counts one more write of bytes [from, to), {@code 0 <= from < to <= length}. */
	void add(int from, int to) {
		int i = split(from);
		int j = to < length ? split(to) : n;
		for (int r = i; r < j; r++) {
			counts[r]++;
		}
		// Only the two edges can now separate runs of equal counts; the later one first, so that i stays put.
		if (j < n && counts[j] == counts[j - 1]) {
			remove(j);
		}
		if (i > 0 && counts[i] == counts[i - 1]) {
			remove(i);
		}
	}

	/** @return bytes written, each counted as often as it was written */
	long sum() {
		long total = 0;
		for (int r = 0; r < n; r++) {
			total += (long) counts[r] * (end(r) - starts[r]);
		}
		return total;
	}

	/** @return heap bytes of the two arrays, for the ledger's account of what it retains */
	long arrayBytes() {
		return 2L * (16 + 4L * starts.length);
	}

	private int end(int r) {
		return r + 1 < n ? starts[r + 1] : length;
	}

	/** @return the run holding byte {@code pos} */
	private int floor(int pos) {
		int at = Arrays.binarySearch(starts, 0, n, pos);
		return at >= 0 ? at : -at - 2;
	}

	/** @return the run that starts at {@code pos}, made by cutting the run holding it in two if needed */
	private int split(int pos) {
		int r = floor(pos);
		if (starts[r] == pos) {
			return r;
		}
		insert(r + 1, pos, counts[r]);
		return r + 1;
	}

	private void insert(int at, int start, int count) {
		if (n == starts.length) {
			int grown = Math.min(capacity, 2 * starts.length);
			if (grown == n) {
				throw new IllegalStateException("item runs past their capacity " + capacity + " (its owner checks "
						+ "the count after each write)");
			}
			starts = Arrays.copyOf(starts, grown);
			counts = Arrays.copyOf(counts, grown);
		}
		System.arraycopy(starts, at, starts, at + 1, n - at);
		System.arraycopy(counts, at, counts, at + 1, n - at);
		starts[at] = start;
		counts[at] = count;
		n++;
	}

	private void remove(int at) {
		System.arraycopy(starts, at + 1, starts, at, n - at - 1);
		System.arraycopy(counts, at + 1, counts, at, n - at - 1);
		n--;
	}
}
