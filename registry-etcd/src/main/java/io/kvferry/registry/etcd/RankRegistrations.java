package io.kvferry.registry.etcd;

import java.nio.charset.StandardCharsets;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.PrefillSizes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * Writes and removes the rank keys of the prefill ranks one {@link EtcdBootstrapClient} registers: a registration
 * fixes or checks the instance's sizes ({@link InstanceInfo}), takes the rank's lease ({@link RankLeases}) and writes
 * the rank's endpoint under it; a deregistration revokes that lease, or deletes a key another process wrote only if it
 * still holds the registration's endpoint. Each is one call of the client's {@link EtcdConnection}. Thread-safe.
 */
final class RankRegistrations {

	private static final Logger LOG = LoggerFactory.getLogger(RankRegistrations.class);

	private final EtcdConnection connection;
	private final RegistryKeys keys;
	private final RankLeases leases;

	RankRegistrations(EtcdConnection connection, RegistryKeys keys, RankLeases leases) {
		this.connection = connection;
		this.keys = keys;
		this.leases = leases;
	}

	/**
	 * Fixes the instance's sizes if this is its first registration (or no rank of it is registered), grants the rank a
	 * lease unless it holds one, and writes its key under it. Registering again with a held lease rewrites the key
	 * only. Not retried here: the etcd client already retries on another member within the timeout.
	 *
	 * @return completes once the key is written; errors with {@code BAD_REQUEST} when the rank lies outside the sizes
	 *         the instance was fixed with, and with {@code OTHER} for a rank of a prefill that uses context parallelism
	 */
	Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
		ParallelLayout l = registration.layout();
		if (l.attnCpSize() > 1) {
			// Its keys have room for a CP rank, but sizes and look-ups do not count CP yet: CP ranks would overwrite
			// each other's endpoint, so they are refused by name instead.
			return Mono.error(new BootstrapException(BootstrapException.Kind.OTHER, 0, "register " + place(l) + " of "
					+ bootstrap + ": attn_cp_size=" + l.attnCpSize() + " is not supported by the etcd registry "
					+ "(expected: 1; use the HTTP bootstrap server for prefill context parallelism)"));
		}
		String rankKey = keys.rank(bootstrap, l.dpGroup(), 0, l.attnTpRank(), l.ppRank());
		String call = "register " + place(l) + " of " + bootstrap + " at " + registration.rankIp() + ":"
				+ registration.rankPort();
		PrefillSizes declared = PrefillSizes.declaredBy(registration);
		byte[] endpoint = endpointJson(registration);
		return connection.bounded(call, client -> InstanceInfo.fix(client, keys, bootstrap, declared)
				.doOnNext(fixed -> InstanceInfo.checkFits(call, fixed, l))
				.then(leases.lease(client, rankKey, bootstrap, registration))
				.flatMap(lease -> Mono.fromFuture(() -> client.getKVClient().put(bytes(rankKey),
						ByteSequence.from(endpoint), PutOption.builder().withLeaseId(lease).build())))
				.doOnNext(put -> LOG.debug("Registered {} as {}", rankKey,
						new String(endpoint, StandardCharsets.UTF_8)))
				.then());
	}

	/**
	 * Revokes the rank's lease, which deletes its key; when this client holds no lease for it (another process
	 * registered it), deletes the key only if it still holds this registration's endpoint.
	 *
	 * @return completes once the key is gone, or was found holding another endpoint
	 */
	Mono<Void> deregister(HostPort bootstrap, PrefillRegistration registration) {
		ParallelLayout l = registration.layout();
		String rankKey = keys.rank(bootstrap, l.dpGroup(), 0, l.attnTpRank(), l.ppRank());
		return connection.bounded("deregister " + place(l) + " of " + bootstrap, client -> Mono.defer(() -> {
			Long lease = leases.withdraw(rankKey);
			if (lease != null) {
				return Mono.fromFuture(() -> client.getLeaseClient().revoke(lease))
						.doOnNext(r -> LOG.debug("Revoked lease {} of {}", Long.toHexString(lease), rankKey))
						// Already ended (expired, or an earlier try of this revoke went through): the key is gone.
						.onErrorResume(EtcdErrors::isLeaseNotFound, e -> Mono.empty())
						.then();
			}
			return Mono.fromFuture(() -> client.getKVClient().txn()
					.If(new Cmp(bytes(rankKey), Cmp.Op.EQUAL, CmpTarget.value(ByteSequence.from(
							endpointJson(registration)))))
					.Then(Op.delete(bytes(rankKey), DeleteOption.DEFAULT))
					.commit()).then();
		}));
	}

	/** @return what a rank key holds for {@code registration}: its endpoints and incarnation */
	private static byte[] endpointJson(PrefillRegistration registration) {
		return RegistryCodec.endpointJson(registration.rankIp(), registration.rankPort(), registration.incarnation(),
				registration.moreEndpoints());
	}

	private static ByteSequence bytes(String text) {
		return RegistryKeys.bytes(text);
	}

	private static String place(ParallelLayout l) {
		return "rank dp=" + l.dpGroup() + " tp=" + l.attnTpRank() + " pp=" + l.ppRank();
	}
}
