package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Lets one caller through at most once per interval, so that a flood of refusals logs one line per interval rather
 * than one per refusal. The first call passes. Thread-safe and lock-free; never blocks.
 */
public final class Throttle {

	private final long intervalNanos;
	private final LongSupplier nanoClock;
	private final AtomicLong lastNanos;

	/**
	 * @param interval the shortest time between two calls that pass, positive
	 * @param nanoClock a monotonic clock in nanoseconds ({@code System::nanoTime} outside tests)
	 */
	public Throttle(Duration interval, LongSupplier nanoClock) {
		Objects.requireNonNull(interval, "interval");
		this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
		if (interval.isNegative() || interval.isZero()) {
			throw new IllegalArgumentException("interval : " + interval + " (expected: > 0)");
		}
		this.intervalNanos = interval.toNanos();
		this.lastNanos = new AtomicLong(nanoClock.getAsLong() - intervalNanos);
	}

	/** @return whether this call passes: true at most once per interval, whichever thread asks */
	public boolean tryPass() {
		long now = nanoClock.getAsLong();
		long last = lastNanos.get();
		return now - last >= intervalNanos && lastNanos.compareAndSet(last, now);
	}
}
