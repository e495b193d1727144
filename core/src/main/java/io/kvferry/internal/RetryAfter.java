package io.kvferry.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The retry hint of a manager's overload refusals: the mean time its rooms took from their first state to Success
 * lately (a moving average, each room weighing one eighth). By Little's law that is the time in which the rooms now
 * holding a bound have ended on average, so a room sent again after it likely finds room. Before any room succeeded
 * the configured hint is used, which also caps the mean (a few slow rooms must not park a router's retries for
 * minutes). Lock-free.
 */
final class RetryAfter {

	private static final long MIN_NANOS = Duration.ofMillis(1).toNanos();

	private final long ceilingNanos;
	// Negative until a room succeeded.
	private final AtomicLong meanNanos = new AtomicLong(-1);

	RetryAfter(Duration ceiling) {
		this.ceilingNanos = ceiling.toNanos();
	}

	/** A room succeeded after {@code lifetimeNanos} from its first state. */
	void succeeded(long lifetimeNanos) {
		long x = Math.max(0, lifetimeNanos);
		meanNanos.accumulateAndGet(x, (mean, next) -> mean < 0 ? next : mean + (next - mean) / 8);
	}

	/** @return the hint to give now: at least 1 ms, at most the configured hint */
	Duration hint() {
		long mean = meanNanos.get();
		long nanos = mean < 0 ? ceilingNanos : Math.min(ceilingNanos, Math.max(MIN_NANOS, mean));
		// Whole milliseconds, as the hint travels; rounded up so that it is never zero.
		return Duration.ofMillis((nanos + 999_999) / 1_000_000);
	}
}
