package io.kvferry.bootstrap;

import io.kvferry.HostPort;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The calls prefill and decode ranks make to a bootstrap server. Every method is lazy (nothing is sent before
 * subscription), non-blocking and bounded by a timeout; failures are {@link BootstrapException}s.
 */
public interface BootstrapClient {

	/**
	 * Registers a prefill rank ({@code PUT /route}), retrying as SGLang does (5 tries, delay min(2^k s, 30 s) × jitter
	 * in [0.75, 1)) before failing with the last error.
	 *
	 * @param bootstrap the bootstrap server
	 * @param registration what to publish
	 * @return completes when the server answered {@code OK}
	 */
	Mono<Void> register(HostPort bootstrap, PrefillRegistration registration);

	/**
	 * Fetches the prefill instance's sizes ({@code GET /route} with −1, −1, −1).
	 *
	 * @param bootstrap the bootstrap server
	 * @return the sizes; {@link BootstrapException.Kind#NOT_READY} until every rank registered
	 */
	Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap);

	/**
	 * Looks up one prefill rank's endpoint.
	 *
	 * @param bootstrap the bootstrap server
	 * @param dpGroup prefill DP group
	 * @param tpRank prefill attention TP rank
	 * @param ppRank prefill PP rank
	 * @return {@code rank_ip:rank_port}; {@link BootstrapException.Kind#NOT_FOUND} when not registered
	 */
	Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank);

	/**
	 * Looks up one prefill rank's endpoint by its attention CP rank too. The default serves CP rank 0 with
	 * {@link #rankEndpoint(HostPort, int, int, int)} and fails for any other: a client that cannot name a CP rank
	 * must not silently return CP rank 0's endpoint.
	 *
	 * @param bootstrap the bootstrap server
	 * @param dpGroup prefill DP group
	 * @param cpRank prefill attention CP rank
	 * @param tpRank prefill attention TP rank
	 * @param ppRank prefill PP rank
	 * @return {@code rank_ip:rank_port}; {@link BootstrapException.Kind#NOT_FOUND} when not registered
	 */
	default Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		if (cpRank == 0) {
			return rankEndpoint(bootstrap, dpGroup, tpRank, ppRank);
		}
		return Mono.error(new BootstrapException(BootstrapException.Kind.OTHER, 0, getClass().getSimpleName()
				+ " cannot look up prefill cp rank " + cpRank + " (dp " + dpGroup + " tp " + tpRank + " pp " + ppRank
				+ " at " + bootstrap + "): it only knows CP rank 0"));
	}

	/**
	 * Looks up one prefill rank's endpoint and the incarnation it registered with. The default answers
	 * {@link #rankEndpoint(HostPort, int, int, int, int)} with an unknown incarnation, for clients of registries that
	 * keep none.
	 *
	 * @param bootstrap the bootstrap server
	 * @param dpGroup prefill DP group
	 * @param cpRank prefill attention CP rank
	 * @param tpRank prefill attention TP rank
	 * @param ppRank prefill PP rank
	 * @return the rank's route; {@link BootstrapException.Kind#NOT_FOUND} when not registered
	 */
	default Mono<RankRoute> rankRoute(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		return rankEndpoint(bootstrap, dpGroup, cpRank, tpRank, ppRank).map(RankRoute::of);
	}

	/**
	 * @param bootstrap the bootstrap server
	 * @return completes when {@code GET /health} answers 200
	 */
	Mono<Void> health(HostPort bootstrap);

	/**
	 * Withdraws a registration, when the registry can (a leased registry revokes the rank's lease). SGLang's HTTP
	 * protocol has no such call: the default does nothing, and the rank's entry stays until it is overwritten.
	 *
	 * @param bootstrap the bootstrap server or registry
	 * @param registration what the rank registered
	 * @return completes when withdrawn
	 */
	default Mono<Void> deregister(HostPort bootstrap, PrefillRegistration registration) {
		return Mono.empty();
	}

	/**
	 * Changes to registered instances, for registries that can watch them (an HTTP bootstrap server cannot: the
	 * default never emits). A decode manager subscribes once and forgets what it cached about a changed instance; a
	 * removed or moved rank's connections are closed, failing their rooms at once.
	 *
	 * <p>Hot; emits only real changes (a rank registering again with the same endpoint is none).
	 *
	 * @return the changes, from subscription on
	 */
	default Flux<RegistryChange> changes() {
		return Flux.never();
	}
}
