package io.kvferry.bootstrap.server.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A count of places taken below a cap, which never passes the cap, not even for a moment between a check and an
 * increment: a place is taken with a compare-and-set. Thread-safe and lock-free; never blocks.
 */
public final class BoundedCount {

	private final int cap;
	private final AtomicInteger taken = new AtomicInteger();

	/** @param cap most places taken at once, at least 0 */
	public BoundedCount(int cap) {
		if (cap < 0) {
			throw new IllegalArgumentException("cap : " + cap + " (expected: >= 0)");
		}
		this.cap = cap;
	}

	/** @return whether a place was free and is now taken */
	public boolean tryTake() {
		for (int now = taken.get(); now < cap; now = taken.get()) {
			if (taken.compareAndSet(now, now + 1)) {
				return true;
			}
		}
		return false;
	}

	/** Gives back a place taken by {@link #tryTake()}. */
	public void release() {
		taken.decrementAndGet();
	}

	/** @return places taken now, at most {@link #cap()} */
	public int taken() {
		return taken.get();
	}

	/** @return most places taken at once */
	public int cap() {
		return cap;
	}
}
