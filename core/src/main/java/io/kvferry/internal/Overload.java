package io.kvferry.internal;

import java.time.Duration;

import io.kvferry.FailureCause;
import io.kvferry.spi.KVMessage;

/**
 * An overload refusal: the words a person reads ({@code overloaded, retry after 250 ms: <why>}) and the hint as the
 * wire carries it. The receiving side learns both the cause and the hint from the message's typed fields
 * ({@link FailureCause#OVERLOAD}, the retry-after field), never from these words.
 */
final class Overload {

	/** Longest hint given; a larger one is given as this (a peer should not park rooms elsewhere for longer). */
	static final Duration MAX_RETRY_AFTER = Duration.ofMillis(KVMessage.MAX_RETRY_AFTER_MILLIS);

	private Overload() {
	}

	/** @return the refusal text: the hint in whole milliseconds, then why */
	static String reason(Duration retryAfter, String why) {
		return "overloaded, retry after " + millis(retryAfter) + " ms: " + why;
	}

	/** @return {@code hint} in whole milliseconds, within 0..{@link #MAX_RETRY_AFTER}, as the wire carries it */
	static int millis(Duration hint) {
		return (int) Math.min(Math.max(0, hint.toMillis()), MAX_RETRY_AFTER.toMillis());
	}
}
