package io.kvferry.transport.synthetic;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import reactor.core.publisher.Mono;

/**
 * The bootstrap client a decode manager is given to find a synthetic prefill instance: it answers the look-ups decode
 * makes (the instance's sizes, each rank's endpoint and incarnation) for that instance's address, from memory, and
 * takes no registrations.
 */
final class SyntheticBootstrap implements BootstrapClient {

	private final SyntheticPrefill source;

	SyntheticBootstrap(SyntheticPrefill source) {
		this.source = source;
	}

	@Override
	public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
		return Mono.error(() -> new BootstrapException(BootstrapException.Kind.BAD_REQUEST, 400, "a synthetic prefill "
				+ "instance takes no registrations (prefill rank " + registration.rankIp() + ":" + registration.rankPort()
				+ " at " + bootstrap + ")"));
	}

	@Override
	public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		return Mono.fromCallable(() -> {
			check(bootstrap);
			return new PrefillParallelInfo(source.attnTpSize(), 1, source.ppSize(), source.pageSize());
		});
	}

	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
		return rankRoute(bootstrap, dpGroup, 0, tpRank, ppRank).map(RankRoute::endpoint);
	}

	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		return rankRoute(bootstrap, dpGroup, cpRank, tpRank, ppRank).map(RankRoute::endpoint);
	}

	@Override
	public Mono<RankRoute> rankRoute(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		return Mono.fromCallable(() -> {
			check(bootstrap);
			if (dpGroup != 0 || cpRank != 0 || tpRank < 0 || tpRank >= source.attnTpSize() || ppRank < 0
					|| ppRank >= source.ppSize()) {
				throw new BootstrapException(BootstrapException.Kind.NOT_FOUND, 404, "no synthetic prefill rank dp "
						+ dpGroup + " cp " + cpRank + " tp " + tpRank + " pp " + ppRank + " (the instance has "
						+ "attn_tp_size=" + source.attnTpSize() + " pp_size=" + source.ppSize() + ", one DP group, no CP)");
			}
			SyntheticPrefill.Rank rank = source.rank(tpRank, ppRank);
			return new RankRoute(rank.endpoint(), rank.incarnation());
		});
	}

	@Override
	public Mono<Void> health(HostPort bootstrap) {
		return Mono.fromRunnable(() -> check(bootstrap));
	}

	private void check(HostPort bootstrap) {
		if (!bootstrap.equals(source.bootstrapAddress())) {
			throw new BootstrapException(BootstrapException.Kind.UNREACHABLE, 0, "no bootstrap server at " + bootstrap
					+ ": this client only answers for the synthetic prefill instance at " + source.bootstrapAddress());
		}
	}

	@Override
	public String toString() {
		return "SyntheticBootstrap{" + source + '}';
	}
}
