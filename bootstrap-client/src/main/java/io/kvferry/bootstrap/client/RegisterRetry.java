package io.kvferry.bootstrap.client;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

import io.kvferry.bootstrap.BootstrapException;
import org.jspecify.annotations.Nullable;

/**
 * How {@link ReactorBootstrapClient#register} tries again, as SGLang does: only failures that may pass
 * ({@link BootstrapException#isRetryable()}), at most {@code attempts} tries, waiting
 * {@code min(base × 2^k, cap) × jitter} before try {@code k + 2}. Immutable.
 */
final class RegisterRetry {

	private final int attempts;
	private final Duration base;
	private final Duration cap;
	private final DoubleSupplier jitter;

	RegisterRetry(int attempts, Duration base, Duration cap, DoubleSupplier jitter) {
		this.attempts = attempts;
		this.base = base;
		this.cap = cap;
		this.jitter = jitter;
	}

	/**
	 * The delay before registration try {@code retry + 2}: {@code min(base × 2^retry, cap) × jitter}, saturating
	 * rather than overflowing.
	 *
	 * @param retry retries made so far (0 before the first retry)
	 * @param base delay before the first retry
	 * @param cap longest delay before jitter
	 * @param jitter the factor, finite and >= 0
	 * @return the delay
	 */
	static Duration backoffDelay(long retry, Duration base, Duration cap, double jitter) {
		if (!(jitter >= 0) || Double.isInfinite(jitter)) {
			throw new IllegalArgumentException("jitter : " + jitter + " (expected: a finite value >= 0)");
		}
		long capNanos = saturatedNanos(cap);
		long nanos = Math.min(saturatedNanos(base), capNanos);
		for (long k = 0; k < retry && nanos < capNanos; k++) {
			nanos = nanos > capNanos / 2 ? capNanos : nanos * 2;
		}
		double scaled = nanos * jitter;
		return Duration.ofNanos(scaled >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) scaled);
	}

	/**
	 * @param retries retries made so far
	 * @param failure what the last try failed with
	 * @return the delay before the next try, or {@code null} when the failure will not pass or the tries are spent
	 */
	@Nullable Duration nextDelay(long retries, Throwable failure) {
		if (!(failure instanceof BootstrapException bootstrapFailure) || !bootstrapFailure.isRetryable()
				|| retries + 1 >= attempts) {
			return null;
		}
		return backoffDelay(retries, base, cap, jitter.getAsDouble());
	}

	/** @return how many tries a registration gets */
	int attempts() {
		return attempts;
	}

	/** @return the final failure: the last one, saying how many tries were made */
	static BootstrapException gaveUp(int attempts, BootstrapException last) {
		return new BootstrapException(last.kind(), last.status(), "Registration with the bootstrap server failed after "
				+ attempts + (attempts == 1 ? " attempt" : " attempts") + "; last error: " + last.getMessage(), last);
	}

	static long saturatedNanos(Duration duration) {
		try {
			return duration.toNanos();
		}
		catch (ArithmeticException e) {
			return Long.MAX_VALUE;
		}
	}

	/** @return SGLang's jitter: uniform in [0.75, 1) */
	static double sglangJitter() {
		return ThreadLocalRandom.current().nextDouble(0.75, 1.0);
	}
}
