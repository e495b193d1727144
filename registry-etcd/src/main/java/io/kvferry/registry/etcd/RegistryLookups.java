package io.kvferry.registry.etcd;

import java.util.List;

import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillSizes;
import io.kvferry.bootstrap.RankRoute;
import reactor.core.publisher.Mono;

/**
 * The reads decode ranks make through one {@link EtcdBootstrapClient}: an instance's parallel info, one rank's route,
 * and the health check. Each is one call of the client's {@link EtcdConnection} (bounded, retried while etcd is
 * electing a leader, failures typed); failures name the etcd endpoints. Writes are {@link RankRegistrations}', changes
 * {@link RegistryWatch}'s. Thread-safe.
 */
final class RegistryLookups {

	private final EtcdConnection connection;
	private final RegistryKeys keys;
	private final List<HostPort> endpoints;

	/** @param endpoints the etcd endpoints, named in failures */
	RegistryLookups(EtcdConnection connection, RegistryKeys keys, List<HostPort> endpoints) {
		this.connection = connection;
		this.keys = keys;
		this.endpoints = endpoints;
	}

	/**
	 * Reads the instance's {@code info} key and counts its rank keys in one consistent read.
	 *
	 * @return the instance's parallel info; {@code NOT_READY} while not every rank is registered
	 */
	Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		String call = "parallel info of " + bootstrap;
		return connection.bounded(call, client -> Mono.fromFuture(() -> client.getKVClient().txn()
				.Then(Op.get(RegistryKeys.bytes(keys.info(bootstrap)), GetOption.DEFAULT),
						Op.get(RegistryKeys.bytes(keys.ranks(bootstrap)), GetOption.builder().isPrefix(true)
								.withCountOnly(true).build()))
				.commit())
				.handle((txn, sink) -> {
					GetResponse info = txn.getGetResponses().get(0);
					long registered = txn.getGetResponses().get(1).getCount();
					PrefillSizes sizes = info.getKvs().isEmpty() ? null
							: RegistryCodec.readSizes(call, info.getKvs().get(0));
					if (sizes == null || !sizes.isComplete(registered)) {
						sink.error(new BootstrapException(BootstrapException.Kind.NOT_READY, 503, call
								+ ": prefill instance not fully registered yet (" + registered + " of "
								+ (sizes == null ? "?" : sizes.totalRanks()) + " ranks registered in etcd "
								+ endpoints + ")"));
						return;
					}
					sink.next(sizes.toParallelInfo());
				}));
	}

	/**
	 * Reads the key of the rank at CP rank 0: its endpoint and the incarnation stored with it.
	 *
	 * @return the route; {@code NOT_FOUND} (404) when the rank is not registered
	 */
	Mono<RankRoute> rankRoute(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
		String call = "rank dp=" + dpGroup + " tp=" + tpRank + " pp=" + ppRank + " of " + bootstrap;
		String rankKey = keys.rank(bootstrap, dpGroup, 0, tpRank, ppRank);
		return connection.bounded(call, client -> Mono.fromFuture(() -> client.getKVClient()
				.get(RegistryKeys.bytes(rankKey)))
				.handle((get, sink) -> {
					if (get.getKvs().isEmpty()) {
						sink.error(new BootstrapException(BootstrapException.Kind.NOT_FOUND, 404, call
								+ ": not registered in etcd " + endpoints + " (no key " + rankKey + ")"));
						return;
					}
					sink.next(RegistryCodec.readRoute(call, get.getKvs().get(0)));
				}));
	}

	/** @return completes when a linearizable read is answered, that is when a quorum of etcd members is up */
	Mono<Void> health() {
		return connection.bounded("health", client -> Mono.fromFuture(() -> client.getKVClient().get(
				RegistryKeys.bytes(keys.instances()), GetOption.builder().withCountOnly(true).build())).then());
	}
}
