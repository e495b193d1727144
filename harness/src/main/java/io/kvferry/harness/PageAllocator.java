package io.kvferry.harness;

import java.util.BitSet;
import java.util.Random;

import org.jspecify.annotations.Nullable;

/**
 * Hands out page (or row) indices of one pool, scattered at random or as one contiguous run, as an engine's allocator
 * would. Thread-safe.
 */
public final class PageAllocator {

	private final BitSet used;
	private final int capacity;
	private int free;

	public PageAllocator(int capacity) {
		if (capacity < 1) {
			throw new IllegalArgumentException("capacity : " + capacity + " (expected: >= 1)");
		}
		this.capacity = capacity;
		this.used = new BitSet(capacity);
		this.free = capacity;
	}

	/**
	 * @param n how many
	 * @param random source of scattering
	 * @param contiguous prefer one run of adjacent indices
	 * @return the indices in request order, or null when fewer than {@code n} are free
	 */
	public synchronized int @Nullable [] allocate(int n, Random random, boolean contiguous) {
		if (n > free) {
			return null;
		}
		int[] out = new int[n];
		if (contiguous) {
			int start = used.nextClearBit(0);
			while (start + n <= capacity) {
				int nextUsed = used.nextSetBit(start);
				if (nextUsed < 0 || nextUsed >= start + n) {
					for (int i = 0; i < n; i++) {
						out[i] = start + i;
					}
					used.set(start, start + n);
					free -= n;
					return out;
				}
				start = used.nextClearBit(nextUsed);
			}
		}
		for (int i = 0; i < n; i++) {
			int probe = random.nextInt(capacity);
			int p = used.nextClearBit(probe);
			if (p >= capacity) {
				p = used.nextClearBit(0);
			}
			used.set(p);
			out[i] = p;
		}
		free -= n;
		return out;
	}

	/** Returns indices to the pool. */
	public synchronized void release(int[] indices) {
		for (int p : indices) {
			if (used.get(p)) {
				used.clear(p);
				free++;
			}
		}
	}

	/** @return free indices */
	public synchronized int free() {
		return free;
	}
}
