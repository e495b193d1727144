package io.kvferry.cli;

import java.util.concurrent.atomic.LongAdder;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RegistryChange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A bootstrap client that counts the registry calls the managers subscribe to, by kind, and passes them on: what the
 * fleet bench reports as registry requests, for the HTTP bootstrap server and etcd alike (each subscription is one
 * request, or one etcd call, before the client's own retries).
 */
final class CountingBootstrapClient implements BootstrapClient {

	private final BootstrapClient delegate;
	private final LongAdder registrations = new LongAdder();
	private final LongAdder lookups = new LongAdder();
	private final LongAdder other = new LongAdder();

	CountingBootstrapClient(BootstrapClient delegate) {
		this.delegate = delegate;
	}

	/** @return register and deregister calls */
	long registrations() {
		return registrations.sum();
	}

	/** @return parallel info and rank endpoint look-ups: what a decode rank asks before it can reach a prefill rank */
	long lookups() {
		return lookups.sum();
	}

	/** @return every call counted */
	long total() {
		return registrations.sum() + lookups.sum() + other.sum();
	}

	@Override
	public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
		return delegate.register(bootstrap, registration).doOnSubscribe(s -> registrations.increment());
	}

	@Override
	public Mono<Void> deregister(HostPort bootstrap, PrefillRegistration registration) {
		return delegate.deregister(bootstrap, registration).doOnSubscribe(s -> registrations.increment());
	}

	@Override
	public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		return delegate.parallelInfo(bootstrap).doOnSubscribe(s -> lookups.increment());
	}

	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
		return delegate.rankEndpoint(bootstrap, dpGroup, tpRank, ppRank).doOnSubscribe(s -> lookups.increment());
	}

	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		return delegate.rankEndpoint(bootstrap, dpGroup, cpRank, tpRank, ppRank)
				.doOnSubscribe(s -> lookups.increment());
	}

	@Override
	public Mono<Void> health(HostPort bootstrap) {
		return delegate.health(bootstrap).doOnSubscribe(s -> other.increment());
	}

	@Override
	public Flux<RegistryChange> changes() {
		return delegate.changes();
	}
}
