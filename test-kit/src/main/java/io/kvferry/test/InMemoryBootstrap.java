package io.kvferry.test;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import io.kvferry.bootstrap.RegistryChange;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * A bootstrap registry without HTTP, with the bootstrap server's rules (first registration fixes the sizes, 503 until
 * every rank registered, 404 for unknown ranks), and a registry's watch: a rank that leaves or moves is reported on
 * {@link #changes()}, and one that registers again with another incarnation as restarted. Lets the engine be tested without sockets.
 */
public final class InMemoryBootstrap implements BootstrapClient {

	private final Map<HostPort, Instance> instances = new ConcurrentHashMap<>();
	private final Sinks.Many<RegistryChange> changes = Sinks.many().multicast().directBestEffort();
	private volatile boolean down;

	private static final class Instance {
		volatile @Nullable PrefillParallelInfo sizes;
		volatile int cpSize = 1;
		final Map<String, RankRoute> ranks = new ConcurrentHashMap<>();
	}

	/** Forgets every registration, as a restarted bootstrap server does. */
	public void reset() {
		instances.clear();
	}

	/** Makes every later call fail as an unreachable server would (or succeed again). */
	public void setDown(boolean down) {
		this.down = down;
	}

	@Override
	public Mono<Void> register(HostPort bootstrap, PrefillRegistration r) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		Objects.requireNonNull(r, "registration");
		return Mono.fromRunnable(() -> {
			checkUp(bootstrap);
			Instance i = instances.computeIfAbsent(bootstrap, b -> new Instance());
			ParallelLayout l = r.layout();
			synchronized (i) {
				if (i.sizes == null) {
					i.sizes = new PrefillParallelInfo(l.attnTpSize(), l.dpSize(), l.ppSize(), r.pageSize());
					i.cpSize = l.attnCpSize();
				}
			}
			RankRoute route = new RankRoute(new HostPort(r.rankIp(), r.rankPort()), r.incarnation(),
					r.moreEndpoints());
			RankRoute before = i.ranks.put(key(l.dpGroup(), l.attnCpRank(), l.attnTpRank(), l.ppRank()), route);
			if (before != null && !before.endpoints().equals(route.endpoints())) {
				emit(new RegistryChange(bootstrap, RegistryChange.Kind.RANK_MOVED, l.dpGroup(), l.attnTpRank(),
						l.ppRank(), r.incarnation()));
			}
			else if (before != null && before.incarnation() != route.incarnation()) {
				emit(new RegistryChange(bootstrap, RegistryChange.Kind.RANK_RESTARTED, l.dpGroup(), l.attnTpRank(),
						l.ppRank(), r.incarnation()));
			}
		});
	}

	/** Removes the rank, as a leased registry does when the rank's lease ends, and reports it. */
	@Override
	public Mono<Void> deregister(HostPort bootstrap, PrefillRegistration r) {
		return Mono.fromRunnable(() -> {
			Instance i = instances.get(bootstrap);
			ParallelLayout l = r.layout();
			if (i != null && i.ranks.remove(key(l.dpGroup(), l.attnCpRank(), l.attnTpRank(), l.ppRank())) != null) {
				emit(new RegistryChange(bootstrap, RegistryChange.Kind.RANK_REMOVED, l.dpGroup(), l.attnTpRank(),
						l.ppRank()));
			}
		});
	}

	@Override
	public Flux<RegistryChange> changes() {
		return changes.asFlux();
	}

	private void emit(RegistryChange change) {
		synchronized (changes) {
			changes.tryEmitNext(change);
		}
	}

	@Override
	public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		return Mono.fromCallable(() -> {
			checkUp(bootstrap);
			Instance i = instances.get(bootstrap);
			PrefillParallelInfo s = i == null ? null : i.sizes;
			int registered = i == null ? 0 : i.ranks.size();
			if (i == null || s == null || registered < s.attnTpSize() * s.dpSize() * s.ppSize() * i.cpSize) {
				throw new BootstrapException(BootstrapException.Kind.NOT_READY, 503,
						"Prefill server not fully registered yet (" + registered + " workers registered).");
			}
			return s;
		});
	}

	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
		return rankEndpoint(bootstrap, dpGroup, 0, tpRank, ppRank);
	}

	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		return rankRoute(bootstrap, dpGroup, cpRank, tpRank, ppRank).map(RankRoute::endpoint);
	}

	@Override
	public Mono<RankRoute> rankRoute(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		return Mono.fromCallable(() -> {
			checkUp(bootstrap);
			Instance i = instances.get(bootstrap);
			RankRoute ep = i == null ? null : i.ranks.get(key(dpGroup, cpRank, tpRank, ppRank));
			if (ep == null) {
				throw new BootstrapException(BootstrapException.Kind.NOT_FOUND, 404, "Bootstrap info not found for dp="
						+ dpGroup + " cp=" + cpRank + " tp=" + tpRank + " pp=" + ppRank);
			}
			return ep;
		});
	}

	@Override
	public Mono<Void> health(HostPort bootstrap) {
		return Mono.fromRunnable(() -> checkUp(bootstrap));
	}

	private void checkUp(HostPort bootstrap) {
		if (down) {
			throw new BootstrapException(BootstrapException.Kind.UNREACHABLE, 0, "bootstrap " + bootstrap + " is down");
		}
	}

	private static String key(int dp, int cp, int tp, int pp) {
		return dp + "/" + cp + "/" + tp + "/" + pp;
	}
}
