package io.kvferry.registry.etcd;

import java.util.List;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillSizes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * An instance's {@code info} key, kept by the rule of {@link PrefillSizes}: the first registration fixes the sizes
 * (a compare-and-put on the key's absence, so concurrent first registrations agree on one), later ones are checked
 * against them. The registry's one departure: when no rank of the instance is registered any more, the next
 * registration replaces the sizes, so a restarted instance may change shape.
 */
final class InstanceInfo {

	private static final Logger LOG = LoggerFactory.getLogger(InstanceInfo.class);

	/** How often the compare-and-put is tried when concurrent registrations keep changing the key under it. */
	private static final int TRIES = 3;

	private InstanceInfo() {
	}

	/**
	 * Makes sure the instance's sizes are fixed and answers them: the declared ones if no {@code info} key exists or
	 * no rank is registered any more, else the stored ones.
	 */
	static Mono<PrefillSizes> fix(Client client, RegistryKeys keys, HostPort bootstrap, PrefillSizes declared) {
		return fix(client, keys, bootstrap, declared, TRIES);
	}

	private static Mono<PrefillSizes> fix(Client client, RegistryKeys keys, HostPort bootstrap, PrefillSizes declared,
			int tries) {
		ByteSequence info = RegistryKeys.bytes(keys.info(bootstrap));
		ByteSequence declaredJson = ByteSequence.from(RegistryCodec.sizesJson(declared));
		return Mono.fromFuture(() -> client.getKVClient().txn()
				.If(new Cmp(info, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
				.Then(Op.put(info, declaredJson, PutOption.DEFAULT))
				.Else(Op.get(info, GetOption.DEFAULT), Op.get(RegistryKeys.bytes(keys.ranks(bootstrap)),
						GetOption.builder().isPrefix(true).withCountOnly(true).build()))
				.commit())
				.flatMap(txn -> {
					if (txn.isSucceeded()) {
						LOG.info("Prefill instance {} sizes fixed by its first registration: {}", bootstrap, declared);
						return Mono.just(PrefillSizes.fix(null, declared));
					}
					List<KeyValue> stored = txn.getGetResponses().get(0).getKvs();
					if (stored.isEmpty()) {
						// Deleted between the compare and the read: start over.
						return retry(client, keys, bootstrap, declared, tries);
					}
					KeyValue kv = stored.get(0);
					PrefillSizes fixed = PrefillSizes.fix(RegistryCodec.readSizes("sizes of " + bootstrap, kv),
							declared);
					if (fixed.equals(declared)) {
						return Mono.just(fixed);
					}
					if (txn.getGetResponses().get(1).getCount() > 0) {
						LOG.warn("Registration for {} declares {} but the instance is {} (fixed by its first "
								+ "registration)", bootstrap, declared, fixed);
						return Mono.just(fixed);
					}
					// No rank left: the instance was restarted with another shape.
					return Mono.fromFuture(() -> client.getKVClient().txn()
							.If(new Cmp(info, Cmp.Op.EQUAL, CmpTarget.modRevision(kv.getModRevision())))
							.Then(Op.put(info, declaredJson, PutOption.DEFAULT))
							.commit())
							.flatMap(replaced -> {
								if (!replaced.isSucceeded()) {
									return retry(client, keys, bootstrap, declared, tries);
								}
								LOG.info("Prefill instance {} had no rank registered; its sizes are now {} (were {})",
										bootstrap, declared, fixed);
								return Mono.just(declared);
							});
				});
	}

	private static Mono<PrefillSizes> retry(Client client, RegistryKeys keys, HostPort bootstrap,
			PrefillSizes declared, int tries) {
		if (tries <= 1) {
			return Mono.error(new BootstrapException(BootstrapException.Kind.OTHER, 0, "sizes of " + bootstrap
					+ " keep changing under concurrent registrations; try again"));
		}
		return fix(client, keys, bootstrap, declared, tries - 1);
	}

	/**
	 * @param call what was asked, for the message
	 * @param fixed the instance's sizes
	 * @param registration the registering rank
	 * @throws BootstrapException {@code BAD_REQUEST} naming the field when the rank lies outside the fixed sizes
	 */
	static void checkFits(String call, PrefillSizes fixed, ParallelLayout registration) {
		String misfit = fixed.misfit(registration);
		if (misfit != null) {
			throw new BootstrapException(BootstrapException.Kind.BAD_REQUEST, 400, call + ": " + misfit);
		}
	}
}
