package io.kvferry.bootstrap.server.internal;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The prefill instance's rank table: its instance-level fields (fixed by the first prefill registration, see
 * {@link PrefillTopology}) and each rank's endpoint.
 * <p>
 * Thread-safe and lock-free (an atomic reference, a concurrent map and an atomic counter), so event-loop threads never
 * wait on each other. Registered ranks are counted once each: re-registering a rank overwrites its endpoint without
 * counting it again, so the instance looks ready only when every one of its dp × cp × tp × pp ranks has registered
 * (SGLang counts every PUT, duplicates included). Entries never expire, as in SGLang.
 */
public final class RouteTable implements RouteStore {

	private static final Logger log = LoggerFactory.getLogger(RouteTable.class);

	/** What a registration did to the table. */
	public enum Outcome {
		/** A rank registered for the first time. */
		ADDED,
		/** A known rank registered again; its endpoint was replaced. */
		REPLACED,
		/** The registration was not a prefill rank's: acknowledged, not stored. */
		IGNORED
	}

	private final AtomicReference<PrefillTopology> topology = new AtomicReference<>();
	private final ConcurrentHashMap<RankKey, RankEndpoint> ranks = new ConcurrentHashMap<>();
	private final AtomicInteger distinctRanks = new AtomicInteger();

	/**
	 * Stores a registration. The first prefill registration fixes the instance's sizes; later ones with other sizes
	 * are stored all the same (as SGLang does) when their ranks fit the fixed sizes, and logged.
	 *
	 * @param registration a validated registration
	 * @return what happened
	 * @throws RequestException 400 when the rank lies outside the sizes fixed by the first registration
	 */
	public Outcome register(Registration registration) {
		Objects.requireNonNull(registration, "registration");
		if (!registration.isPrefill()) {
			// Only prefill ranks publish KV endpoints; SGLang's older server let any role fix the prefill sizes, which is wrong.
			log.debug("Ignored registration with role {} from {}", registration.role(), registration.endpoint());
			return Outcome.IGNORED;
		}
		PrefillTopology declared = registration.topology();
		PrefillTopology first = topology.compareAndExchange(null, declared);
		PrefillTopology fixed;
		if (first == null) {
			fixed = declared;
			log.debug("Prefill instance sizes fixed by first registration: {}", fixed);
		}
		else {
			// Pure and cheap: retried under contention, as updateAndGet may.
			fixed = topology.updateAndGet(current -> current.fillMissing(declared));
		}
		if (first != null && !fixed.sameShape(declared)) {
			log.warn("Registration from {} declares {} but the instance is {} (fixed by its first registration)",
					registration.endpoint(), declared, fixed);
		}
		checkFits(registration, fixed);
		RankKey key = registration.key();
		RankEndpoint previous = ranks.put(key, registration.endpoint());
		if (previous != null) {
			log.debug("Prefill rank {} registered again: {} replaces {}", key, registration.endpoint(), previous);
			return Outcome.REPLACED;
		}
		int count = distinctRanks.incrementAndGet();
		log.debug("Prefill rank {} registered at {} ({} ranks registered)", key, registration.endpoint(), count);
		if (count == fixed.totalRanks()) {
			// Ranks only ever fit the fixed sizes, so the count reaches the total exactly once.
			log.info("Prefill instance fully registered: {} ({} ranks)", fixed, count);
		}
		return Outcome.ADDED;
	}

	@Override
	public Mono<Outcome> store(Registration registration) {
		return Mono.fromCallable(() -> register(registration));
	}

	@Override
	public Mono<Snapshot> read(RankKey key) {
		return Mono.fromSupplier(() -> new Snapshot(topology.get(), distinctRanks.get(), key == null ? null
				: ranks.get(key)));
	}

	/** @return the instance's fields, or {@code null} before the first prefill registration */
	@Override
	public PrefillTopology topology() {
		return topology.get();
	}

	/** @return how many distinct prefill ranks have registered */
	@Override
	public int registeredCount() {
		return distinctRanks.get();
	}

	/** @return whether every rank of the instance (dp × cp × tp × pp) has registered */
	public boolean isReady() {
		PrefillTopology fixed = topology.get();
		return fixed != null && fixed.sizes().isComplete(distinctRanks.get());
	}

	/**
	 * @param key a rank's place
	 * @return its endpoint, or {@code null} when that rank has not registered
	 */
	public RankEndpoint lookup(RankKey key) {
		Objects.requireNonNull(key, "key");
		return ranks.get(key);
	}

	/**
	 * @throws RequestException 400 when the registration's rank lies outside the fixed sizes
	 */
	static void checkFits(Registration registration, PrefillTopology fixed) {
		String misfit = fixed.sizes().misfit(registration.dpGroupField(), registration.dpGroup(),
				registration.attnCpRank(), registration.attnTpRank(), registration.ppRank());
		if (misfit != null) {
			throw RequestException.badRequest(misfit);
		}
	}
}
