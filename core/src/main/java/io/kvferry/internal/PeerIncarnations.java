package io.kvferry.internal;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The incarnation each peer rank was last seen with, from its registration or its handshake, and the ones it left
 * behind. A peer seen with another incarnation than its current one restarted: the caller replaces what it cached for
 * the old one. A retired incarnation seen again (a registry that still answers the old registration, a late
 * handshake) changes nothing: a peer never goes back to an earlier process.
 *
 * @param <K> how peers are named
 */
final class PeerIncarnations<K> {

	// Retired incarnations kept per peer: enough to ignore a registry that lags a few restarts behind.
	private static final int RETIRED_KEPT = 8;

	private final Map<K, Seen> byPeer = new HashMap<>();

	private static final class Seen {
		long current;
		final ArrayDeque<Long> retired = new ArrayDeque<>();
	}

	/**
	 * Records that {@code peer} showed {@code incarnation}.
	 *
	 * @return the incarnation it replaced when the peer restarted, else {@link Incarnation#UNKNOWN} (first sight, the
	 *         same incarnation, an unknown one, or one it already left behind)
	 */
	synchronized long observe(K peer, long incarnation) {
		if (incarnation == Incarnation.UNKNOWN) {
			return Incarnation.UNKNOWN;
		}
		Seen seen = byPeer.computeIfAbsent(peer, p -> new Seen());
		if (seen.current == incarnation || seen.retired.contains(incarnation)) {
			return Incarnation.UNKNOWN;
		}
		long old = seen.current;
		seen.current = incarnation;
		if (old == Incarnation.UNKNOWN) {
			return Incarnation.UNKNOWN;
		}
		if (seen.retired.size() == RETIRED_KEPT) {
			seen.retired.removeFirst();
		}
		seen.retired.addLast(old);
		return old;
	}

	/** @return whether {@code incarnation} is one {@code peer} left behind */
	synchronized boolean isRetired(K peer, long incarnation) {
		Seen seen = byPeer.get(peer);
		return seen != null && incarnation != Incarnation.UNKNOWN && seen.retired.contains(incarnation);
	}

	/** @return the incarnation {@code peer} was last seen with, {@link Incarnation#UNKNOWN} when never */
	synchronized long current(K peer) {
		Seen seen = byPeer.get(peer);
		return seen == null ? Incarnation.UNKNOWN : seen.current;
	}
}
