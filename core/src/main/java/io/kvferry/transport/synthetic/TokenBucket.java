package io.kvferry.transport.synthetic;

/**
 * Paces units (bytes, rooms) at a rate with a burst allowance, by the time at which the bucket would be even again: a
 * reservation is always taken and answers how long to wait before acting on it, so that many takers share one rate
 * without polling. Thread-safe.
 */
final class TokenBucket {

	private final double nanosPerUnit;
	private final long toleranceNanos;
	// When the units reserved so far are paid for at the rate; guarded by this.
	private long evenAt = Long.MIN_VALUE;

	/**
	 * @param unitsPerSecond the rate, above 0
	 * @param burst units that may go at once after a quiet spell
	 */
	TokenBucket(double unitsPerSecond, long burst) {
		if (!(unitsPerSecond > 0) || Double.isInfinite(unitsPerSecond) || burst < 1) {
			throw new IllegalArgumentException("token bucket : " + unitsPerSecond + " units/s, burst " + burst
					+ " (expected: a finite rate above 0, burst >= 1)");
		}
		this.nanosPerUnit = 1e9 / unitsPerSecond;
		this.toleranceNanos = Math.round(burst * nanosPerUnit);
	}

	/**
	 * Takes {@code units} at time {@code now}.
	 *
	 * @return nanoseconds to wait before acting on them (0: at once)
	 */
	synchronized long reserve(long now, long units) {
		long cost = Math.round(units * nanosPerUnit);
		evenAt = Math.max(evenAt, now) + cost;
		return Math.max(0, evenAt - toleranceNanos - now);
	}
}
