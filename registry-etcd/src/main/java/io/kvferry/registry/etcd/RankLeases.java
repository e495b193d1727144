package io.kvferry.registry.etcd;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.PrefillRegistration;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The leases of the ranks one {@link EtcdBootstrapClient} registered: one per rank key, renewed every third of the TTL
 * (jetcd's keep-alive) until the rank deregisters or the client is disposed. When etcd reports a lease ended while its
 * rank is still registered, the rank registers again (a new lease, its key written anew). Thread-safe.
 */
final class RankLeases {

	private static final Logger LOG = LoggerFactory.getLogger(RankLeases.class);

	private final Duration ttl;
	private final BooleanSupplier disposed;
	private final BiFunction<HostPort, PrefillRegistration, Mono<Void>> register;
	/** Live leases by rank key: one per rank this client registered and has not withdrawn. */
	private final Map<String, RankLease> leases = new ConcurrentHashMap<>();

	/**
	 * @param ttl the lease TTL, whole seconds
	 * @param disposed whether the owning client was disposed (then no lease is renewed)
	 * @param register registers a rank again when its lease ended
	 */
	RankLeases(Duration ttl, BooleanSupplier disposed, BiFunction<HostPort, PrefillRegistration, Mono<Void>> register) {
		this.ttl = ttl;
		this.disposed = disposed;
		this.register = register;
	}

	/** The rank's live lease, or a new one, renewed until deregistered or found ended. */
	Mono<Long> lease(Client client, String rankKey, HostPort bootstrap, PrefillRegistration registration) {
		return Mono.defer(() -> {
			RankLease held = leases.get(rankKey);
			if (held != null && held.alive.get()) {
				return Mono.just(held.id);
			}
			return Mono.fromFuture(() -> client.getLeaseClient().grant(ttl.toSeconds())).map(granted -> {
				RankLease fresh = new RankLease(rankKey, granted.getID(), bootstrap, registration);
				RankLease previous = leases.put(rankKey, fresh);
				if (previous != null && previous != held) {
					// A concurrent registration of the same rank won a lease too: keep ours, end theirs.
					previous.stop();
					client.getLeaseClient().revoke(previous.id);
				}
				if (disposed.getAsBoolean()) {
					fresh.stop();
				}
				else {
					fresh.keepAlive = client.getLeaseClient().keepAlive(fresh.id, fresh);
				}
				LOG.debug("Granted lease {} ({} s) for {}", Long.toHexString(fresh.id), ttl.toSeconds(), rankKey);
				return fresh.id;
			});
		});
	}

	/**
	 * Stops renewing the rank's lease and forgets it.
	 *
	 * @return its lease id, or {@code null} when this client holds no lease for the rank
	 */
	@Nullable Long withdraw(String rankKey) {
		RankLease lease = leases.remove(rankKey);
		if (lease == null) {
			return null;
		}
		lease.stop();
		return lease.id;
	}

	/** Stops renewing every lease; their keys expire within the TTL. */
	void stopAll() {
		leases.values().forEach(RankLease::stop);
		leases.clear();
	}

	/** One rank's lease and its renewals. */
	private final class RankLease implements StreamObserver<LeaseKeepAliveResponse> {

		final String rankKey;
		final long id;
		final HostPort bootstrap;
		final PrefillRegistration registration;
		final AtomicBoolean alive = new AtomicBoolean(true);
		volatile @Nullable CloseableClient keepAlive;

		RankLease(String rankKey, long id, HostPort bootstrap, PrefillRegistration registration) {
			this.rankKey = rankKey;
			this.id = id;
			this.bootstrap = bootstrap;
			this.registration = registration;
		}

		void stop() {
			alive.set(false);
			CloseableClient k = keepAlive;
			if (k != null) {
				k.close();
			}
		}

		@Override
		public void onNext(LeaseKeepAliveResponse response) {
			if (response.getTTL() <= 0) {
				ended("etcd reports it expired");
			}
		}

		@Override
		public void onError(Throwable error) {
			ended(EtcdErrors.describe(error));
		}

		@Override
		public void onCompleted() {
			ended("renewals stopped");
		}

		private void ended(String why) {
			if (!alive.compareAndSet(true, false) || leases.get(rankKey) != this || disposed.getAsBoolean()) {
				return;
			}
			LOG.warn("Lease {} of {} ended ({}); registering again", Long.toHexString(id), rankKey, why);
			stop();
			register.apply(bootstrap, registration).subscribe(null, e -> LOG.warn("Registering {} again failed: {}",
					rankKey, EtcdErrors.describe(e)));
		}
	}
}
