package io.kvferry.internal;

import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The incarnation each peer rank was last seen with, from its registration or its handshake, and the ones it left
 * behind. A peer seen with another incarnation than its current one restarted: the caller replaces what it cached for
 * the old one. A retired incarnation seen again (a registry that still answers the old registration, the old process
 * back from a pause, a late handshake) changes nothing here, and the caller refuses it: a peer never goes back to an
 * earlier process.
 *
 * <p>Bounded: at most {@value #RETIRED_KEPT} retired incarnations per peer (the oldest forgotten first), and at most
 * {@value #PEERS_KEPT} peers, the one seen longest ago forgotten first; a forgotten peer's next incarnation is a first
 * sight.
 *
 * @param <K> how peers are named
 */
final class PeerIncarnations<K> {

	// Retired incarnations kept per peer: enough to refuse a registry that lags a few restarts behind.
	static final int RETIRED_KEPT = 8;
	// Peers kept: far more prefill ranks than one decode rank talks to, so that only ranks long gone are forgotten.
	static final int PEERS_KEPT = 4096;

	private final int peersKept;
	// In the order peers were last seen: the first is the one to forget.
	private final LinkedHashMap<K, Seen> byPeer;

	PeerIncarnations() {
		this(PEERS_KEPT);
	}

	PeerIncarnations(int peersKept) {
		this.peersKept = peersKept;
		this.byPeer = new LinkedHashMap<>(16, 0.75f, true) {
			private static final long serialVersionUID = 1L;

			@Override
			protected boolean removeEldestEntry(Map.Entry<K, Seen> eldest) {
				return size() > PeerIncarnations.this.peersKept;
			}
		};
	}

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

	/** @return peers remembered now, at most {@code peersKept} */
	synchronized int peers() {
		return byPeer.size();
	}

	/** @return the incarnation {@code peer} was last seen with, {@link Incarnation#UNKNOWN} when never */
	synchronized long current(K peer) {
		Seen seen = byPeer.get(peer);
		return seen == null ? Incarnation.UNKNOWN : seen.current;
	}
}
