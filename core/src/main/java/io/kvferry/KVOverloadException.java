package io.kvferry;

import java.time.Duration;
import java.util.Objects;

/**
 * A room was turned away because a bound was reached (rooms in flight on decode, rooms waiting for prefill's engine,
 * a subscriber that fell behind): its {@link #failureCause()} is always {@link FailureCause#OVERLOAD}. Nothing of the
 * room was moved, so an engine or router may send it again: to another rank at once, or to the same one after
 * {@link #retryAfter()}.
 */
public class KVOverloadException extends KVTransferException {

	private static final long serialVersionUID = 1L;

	private final Duration retryAfter;

	/**
	 * @param room the room turned away
	 * @param reason names the bound and the rank that refused
	 * @param fromAnotherRank whether the peer refused the room rather than this rank
	 * @param retryAfter when the rank that refused expects to admit rooms again; zero when it gave no hint
	 */
	public KVOverloadException(long room, String reason, boolean fromAnotherRank, Duration retryAfter) {
		super(room, FailureCause.OVERLOAD, reason, fromAnotherRank);
		Objects.requireNonNull(retryAfter, "retryAfter");
		if (retryAfter.isNegative()) {
			throw new IllegalArgumentException("retryAfter : " + retryAfter + " (expected: >= 0)");
		}
		this.retryAfter = retryAfter;
	}

	/**
	 * @return how long the rank that refused the room expects its rooms in flight to take to end, so that a room sent
	 *         again after it is likely admitted; zero when that rank gave no hint (a peer of an older version)
	 */
	public Duration retryAfter() {
		return retryAfter;
	}
}
