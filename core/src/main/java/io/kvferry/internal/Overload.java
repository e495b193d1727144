package io.kvferry.internal;

import java.time.Duration;

import io.kvferry.spi.KVMessage;

/**
 * The text of an overload refusal as it travels in a {@link KVMessage.Status} or {@link KVMessage.Abort} reason:
 * {@code overloaded: retry-after-ms=250; <why>}. The peer wrote it, so reading it never trusts it: a hint that is
 * malformed, too long or out of range is no hint, and the reason is still an overload.
 */
final class Overload {

	/** Longest hint honoured; a larger one is read as this (a peer should not park rooms elsewhere for longer). */
	static final Duration MAX_RETRY_AFTER = Duration.ofMinutes(5);
	// Digits read at most: more cannot be a hint within the bound.
	private static final int MAX_DIGITS = 10;

	private Overload() {
	}

	/** @return the refusal text: the prefix, the hint in whole milliseconds, then why */
	static String reason(Duration retryAfter, String why) {
		long ms = Math.min(Math.max(0, retryAfter.toMillis()), MAX_RETRY_AFTER.toMillis());
		return KVMessage.OVERLOADED + KVMessage.RETRY_AFTER_MS + ms + "; " + why;
	}

	/** @return whether {@code reason} is an overload refusal, with or without a hint */
	static boolean is(String reason) {
		return reason.startsWith(KVMessage.OVERLOADED);
	}

	/**
	 * @return the hint of an overload refusal, at most {@link #MAX_RETRY_AFTER}; null when {@code reason} is no
	 *         overload refusal or carries no well-formed hint
	 */
	static Duration retryAfter(String reason) {
		int at = KVMessage.OVERLOADED.length();
		if (!reason.startsWith(KVMessage.OVERLOADED) || !reason.startsWith(KVMessage.RETRY_AFTER_MS, at)) {
			return null;
		}
		at += KVMessage.RETRY_AFTER_MS.length();
		long ms = 0;
		int digits = 0;
		for (; at < reason.length(); at++) {
			char c = reason.charAt(at);
			if (c == ';') {
				break;
			}
			if (c < '0' || c > '9' || ++digits > MAX_DIGITS) {
				return null;
			}
			ms = ms * 10 + (c - '0');
		}
		if (digits == 0 || at == reason.length()) {
			return null;
		}
		return Duration.ofMillis(Math.min(ms, MAX_RETRY_AFTER.toMillis()));
	}
}
