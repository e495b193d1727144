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

	/**
	 * Hands out indices as a busy pool whose free list was shuffled by many rooms coming and going: short runs of
	 * adjacent free indices (1 to {@code maxRun} long) at random places.
	 *
	 * @param n how many
	 * @param random source of places and run lengths
	 * @param maxRun longest run, &ge; 1
	 * @return the indices in request order, or null when fewer than {@code n} are free
	 */
	public synchronized int @Nullable [] allocateRuns(int n, Random random, int maxRun) {
		if (maxRun < 1) {
			throw new IllegalArgumentException("maxRun : " + maxRun + " (expected: >= 1)");
		}
		if (n > free) {
			return null;
		}
		int[] out = new int[n];
		int taken = 0;
		while (taken < n) {
			int run = Math.min(n - taken, 1 + random.nextInt(maxRun));
			int p = used.nextClearBit(random.nextInt(capacity));
			if (p >= capacity) {
				p = used.nextClearBit(0);
			}
			// The run ends early at a used index: a shorter run, as a real free list has.
			for (int i = 0; i < run && p < capacity && !used.get(p); i++, p++) {
				used.set(p);
				out[taken++] = p;
			}
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
