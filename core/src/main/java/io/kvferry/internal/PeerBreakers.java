package io.kvferry.internal;

import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import java.util.function.Supplier;

import io.kvferry.bootstrap.BootstrapException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * Decode's circuit breaker per prefill rank. Consecutive failures to reach one rank (its connection or handshake
 * failed; rooms a reachable rank fails do not count) are counted; a success (a session opened, a room succeeded)
 * clears the count. At {@code threshold} the breaker opens: rooms that would ask the rank fail at once, and a probe
 * runs every
 * {@code probeInterval} on the manager's timer (it opens the rank's session, or finds it open); the first that succeeds
 * closes the breaker and the rank gets rooms again. A rank the registry no longer knows, or that came back as another
 * process or at another endpoint, is forgotten: it is a new peer.
 *
 * <p>Only ranks with failures are held, {@value #KEPT} at most: when another one fails, a rank whose breaker is closed
 * is dropped to make room (only more ranks than that with open breakers at once go past it). Nothing here runs a
 * caller's code under its lock.
 */
final class PeerBreakers {

	private static final Logger log = LoggerFactory.getLogger(PeerBreakers.class);

	// Ranks held with failures; far more than one decode rank talks to.
	static final int KEPT = 4096;

	/** Never opens: a manager without breakers (prefill). */
	static final PeerBreakers NONE = new PeerBreakers("none", 0, Duration.ZERO, null);

	private final String name;
	private final int threshold;
	private final Duration probeInterval;
	private final Scheduler timer;
	private final ConcurrentHashMap<SessionKey, Breaker> byPeer = new ConcurrentHashMap<>();
	private final LongAdder opened = new LongAdder();
	private final LongAdder probesFailed = new LongAdder();
	private volatile boolean disposed;

	/** One rank's count and, while open, its next probe. */
	private static final class Breaker {
		int failures;
		String last;
		boolean open;
		// What a probe does: open the rank's session, or find it open.
		Supplier<Mono<?>> probe;
		Disposable nextProbe;
	}

	/**
	 * @param name the manager's name, for logs
	 * @param threshold consecutive failures that open a breaker; 0: never
	 * @param probeInterval how long an open breaker waits before each probe
	 * @param timer runs the probes
	 */
	PeerBreakers(String name, int threshold, Duration probeInterval, Scheduler timer) {
		this.name = name;
		this.threshold = threshold;
		this.probeInterval = probeInterval;
		this.timer = timer;
	}

	/** @return why rooms must not ask {@code key} now, or null when its breaker is closed */
	String refusal(SessionKey key) {
		Breaker b = byPeer.get(key);
		if (b == null) {
			return null;
		}
		synchronized (b) {
			return b.open ? "decode stopped asking prefill rank dp " + key.dp() + " cp " + key.cp() + " tp " + key.tp()
					+ " pp " + key.pp() + " of " + key.bootstrap() + " for rooms after " + b.failures + " failures in a "
					+ "row (the last: " + b.last + "); a probe every " + probeInterval.toMillis() + " ms readmits it"
					: null;
		}
	}

	/**
	 * Counts a failure with the rank; the one that reaches the threshold opens its breaker.
	 *
	 * @param what what failed, for the refusals' reason
	 * @param probe what a probe does once the breaker is open
	 */
	void failed(SessionKey key, String what, Supplier<Mono<?>> probe) {
		if (threshold == 0 || disposed) {
			return;
		}
		if (!byPeer.containsKey(key)) {
			// Outside computeIfAbsent: a map must not be changed from within its own mapping function.
			trim();
		}
		Breaker b = byPeer.computeIfAbsent(key, k -> new Breaker());
		boolean opens;
		synchronized (b) {
			b.failures++;
			b.last = what;
			b.probe = probe;
			opens = !b.open && b.failures >= threshold;
			if (opens) {
				b.open = true;
				b.nextProbe = timer.schedule(() -> probe(key, b), probeInterval.toNanos(), TimeUnit.NANOSECONDS);
			}
		}
		if (opens) {
			opened.increment();
			log.warn("[{}] prefill rank dp {} cp {} tp {} pp {} of {} failed {} times in a row (the last: {}): its new "
					+ "rooms fail at once until a probe, every {} ms, reaches it", name, key.dp(), key.cp(), key.tp(),
					key.pp(), key.bootstrap(), threshold, what, probeInterval.toMillis());
		}
	}

	/** A success with the rank: its count starts again, and a rank whose breaker is closed is not held any more. */
	void succeeded(SessionKey key) {
		Breaker b = byPeer.get(key);
		if (b == null) {
			return;
		}
		synchronized (b) {
			if (b.open) {
				// Only a probe readmits a rank: a room that was in flight when it opened says nothing of new ones.
				return;
			}
			byPeer.remove(key, b);
		}
	}

	/** Forgets the ranks {@code which} names: they are new peers (moved, restarted) or gone from the registry. */
	void forget(Predicate<SessionKey> which) {
		for (Iterator<Map.Entry<SessionKey, Breaker>> it = byPeer.entrySet().iterator(); it.hasNext();) {
			Map.Entry<SessionKey, Breaker> e = it.next();
			if (which.test(e.getKey())) {
				it.remove();
				close(e.getValue());
			}
		}
	}

	private void probe(SessionKey key, Breaker b) {
		Supplier<Mono<?>> probe;
		synchronized (b) {
			if (!b.open || byPeer.get(key) != b || disposed) {
				return;
			}
			probe = b.probe;
		}
		probe.get().subscribe(ok -> readmit(key, b), e -> {
			probesFailed.increment();
			if (e instanceof BootstrapException be && be.kind() == BootstrapException.Kind.NOT_FOUND) {
				// The registry no longer knows the rank: nothing to probe; its rooms fail as unresolved.
				log.info("[{}] stopped probing prefill rank dp {} cp {} tp {} pp {} of {}: {}", name, key.dp(),
						key.cp(), key.tp(), key.pp(), key.bootstrap(), Failures.describe(e));
				forget(key::equals);
				return;
			}
			synchronized (b) {
				b.last = "probe: " + Failures.describe(e);
				if (b.open && !disposed && byPeer.get(key) == b) {
					b.nextProbe = timer.schedule(() -> probe(key, b), probeInterval.toNanos(), TimeUnit.NANOSECONDS);
				}
			}
			log.debug("[{}] probe of prefill rank {} failed: {}", name, key, Failures.describe(e));
		});
	}

	private void readmit(SessionKey key, Breaker b) {
		if (byPeer.remove(key, b)) {
			close(b);
			log.info("[{}] prefill rank dp {} cp {} tp {} pp {} of {} answered a probe: it gets rooms again", name,
					key.dp(), key.cp(), key.tp(), key.pp(), key.bootstrap());
		}
	}

	private static void close(Breaker b) {
		Disposable next;
		synchronized (b) {
			b.open = false;
			next = b.nextProbe;
			b.nextProbe = null;
		}
		if (next != null) {
			next.dispose();
		}
	}

	/** Makes room for one more rank: drops a rank whose breaker is closed, else the map grows past the bound. */
	private void trim() {
		if (byPeer.size() < KEPT) {
			return;
		}
		for (Map.Entry<SessionKey, Breaker> e : byPeer.entrySet()) {
			synchronized (e.getValue()) {
				if (!e.getValue().open) {
					byPeer.remove(e.getKey(), e.getValue());
					return;
				}
			}
		}
	}

	/** @return ranks whose breaker is open now */
	int open() {
		int n = 0;
		for (Breaker b : byPeer.values()) {
			synchronized (b) {
				n += b.open ? 1 : 0;
			}
		}
		return n;
	}

	/** @return ranks held: those with failures since their last success */
	int held() {
		return byPeer.size();
	}

	/** @return breakers opened since the manager started */
	long opened() {
		return opened.sum();
	}

	/** @return probes that failed since the manager started */
	long probesFailed() {
		return probesFailed.sum();
	}

	/** Stops every probe. */
	void dispose() {
		disposed = true;
		forget(k -> true);
	}
}
