package io.kvferry.bootstrap.server.internal;

import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Where the bootstrap server keeps its prefill instance's registrations: in memory ({@link RouteTable}, the default,
 * lost on restart) or in a shared store that several stateless servers answer from (etcd). Both keep SGLang's rules:
 * the first registration fixes the instance's sizes, a rank outside them is refused, a rank registering again replaces
 * its endpoint.
 */
public interface RouteStore extends Disposable {

	/**
	 * Stores a registration.
	 *
	 * @param registration a validated registration
	 * @return what happened; errors with a {@link RequestException} (400) when the rank lies outside the fixed sizes
	 */
	Mono<RouteTable.Outcome> store(Registration registration);

	/**
	 * Reads the instance as it is now.
	 *
	 * @param key a rank whose endpoint is wanted, or {@code null} for none
	 * @return the instance's sizes, how many ranks registered, and the rank's endpoint
	 */
	Mono<Snapshot> read(RankKey key);

	/** @return the instance's sizes as last seen, or {@code null} before any registration was seen; for gauges */
	PrefillTopology topology();

	/** @return how many distinct ranks were registered when last seen; for gauges */
	int registeredCount();

	/** Releases what the store holds (connections); the in-memory store holds nothing. */
	@Override
	default void dispose() {
	}

	/**
	 * The instance at one moment.
	 *
	 * @param topology its sizes, or {@code null} before its first registration
	 * @param registered how many distinct ranks registered
	 * @param endpoint the endpoint of the rank asked for, or {@code null} when not registered or not asked
	 */
	record Snapshot(PrefillTopology topology, int registered, RankEndpoint endpoint) {

		/** @return whether every rank of the instance (dp × cp × tp × pp) has registered */
		public boolean isReady() {
			return topology != null && topology.sizes().isComplete(registered);
		}
	}
}
