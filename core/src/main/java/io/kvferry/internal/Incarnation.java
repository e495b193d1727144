package io.kvferry.internal;

import java.security.SecureRandom;

import io.kvferry.bootstrap.BootstrapFields;

/**
 * A rank's incarnation: a random non-zero id drawn when its manager is built. Zero stands for "unknown" (a peer or a
 * registry that does not send one), and an unknown incarnation never makes a peer look restarted.
 */
final class Incarnation {

	/** An incarnation nobody told. */
	static final long UNKNOWN = 0;

	private static final SecureRandom RANDOM = new SecureRandom();

	private Incarnation() {
	}

	/** @return a fresh incarnation, never {@link #UNKNOWN} */
	static long draw() {
		long id;
		do {
			id = RANDOM.nextLong();
		}
		while (id == UNKNOWN);
		return id;
	}

	/**
	 * @param known the incarnation a cache holds for a peer
	 * @param seen the one the peer (or its registration) now shows
	 * @return whether {@code seen} is another process than {@code known}: both known and different
	 */
	static boolean replaces(long known, long seen) {
		return known != UNKNOWN && seen != UNKNOWN && known != seen;
	}

	/** @return the incarnation as logs and reasons show it: 16 hex digits, or {@code unknown} */
	static String text(long incarnation) {
		return incarnation == UNKNOWN ? "unknown" : BootstrapFields.incarnationText(incarnation);
	}
}
