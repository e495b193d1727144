package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;

import com.fasterxml.jackson.databind.JsonNode;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.registry.etcd.EtcdBootstrapClient;
import io.kvferry.registry.etcd.RegistryKeys;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The bootstrap server's registrations in etcd, under the etcd registry's key layout ({@link RegistryKeys}), so that
 * several bootstrap servers of one instance answer the same and a restarted one loses nothing; prefill and decode
 * ranks that use {@link EtcdBootstrapClient} directly see the same instance.
 * <p>
 * The instance's fields are stored as today's parallel-info answer (the first registration's, with
 * {@code kv_cache_dtype} and {@code prefill_http_port} filled by later ones); each rank's endpoint as
 * {@code {"rank_ip": .., "rank_port": ..}}. Rank keys carry no lease: SGLang ranks register once and never renew, so
 * their entries stay, as they do in SGLang's server.
 */
public final class EtcdRouteStore implements RouteStore {

	private static final Logger log = LoggerFactory.getLogger(EtcdRouteStore.class);

	private final EtcdBootstrapClient etcd;
	private final HostPort instance;
	private final RegistryKeys keys;
	private volatile PrefillTopology lastTopology;
	private volatile int lastRegistered;

	/**
	 * @param etcd the etcd client (its timeout, retries and key prefix apply); disposed with this store
	 * @param instance the address decode ranks name this instance by (the bootstrap server's, or its load balancer's)
	 */
	public EtcdRouteStore(EtcdBootstrapClient etcd, HostPort instance) {
		this.etcd = Objects.requireNonNull(etcd, "etcd");
		this.instance = Objects.requireNonNull(instance, "instance");
		this.keys = etcd.keys();
	}

	@Override
	public Mono<RouteTable.Outcome> store(Registration registration) {
		if (!registration.isPrefill()) {
			log.debug("Ignored registration with role {} from {}", registration.role(), registration.endpoint());
			return Mono.just(RouteTable.Outcome.IGNORED);
		}
		RankKey key = registration.key();
		ByteSequence rankKey = bytes(keys.rank(instance, key.dpGroup(), key.cpRank(), key.tpRank(), key.ppRank()));
		ByteSequence endpoint = ByteSequence.from(Json.write(registration.endpoint().toJson()));
		return etcd.call("fix the sizes of " + instance, client -> fix(client, registration.topology()))
				.doOnNext(fixed -> {
					lastTopology = fixed;
					RouteTable.checkFits(registration, fixed);
				})
				.then(etcd.call("register " + key + " of " + instance, client -> Mono.fromFuture(() ->
						client.getKVClient().put(rankKey, endpoint, PutOption.builder().withPrevKV().build()))))
				.map(put -> {
					if (put.hasPrevKv()) {
						log.debug("Prefill rank {} registered again at {}", key, registration.endpoint());
						return RouteTable.Outcome.REPLACED;
					}
					log.debug("Prefill rank {} registered at {}", key, registration.endpoint());
					return RouteTable.Outcome.ADDED;
				});
	}

	/** Stores the declared fields if the instance has none, else fills what the stored ones miss. */
	private Mono<PrefillTopology> fix(io.etcd.jetcd.Client client, PrefillTopology declared) {
		ByteSequence info = bytes(keys.info(instance));
		return Mono.fromFuture(() -> client.getKVClient().txn()
				.If(new Cmp(info, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
				.Then(Op.put(info, json(declared), PutOption.DEFAULT))
				.Else(Op.get(info, GetOption.DEFAULT))
				.commit())
				.flatMap(txn -> {
					if (txn.isSucceeded()) {
						log.info("Prefill instance {} sizes fixed by first registration: {}", instance, declared);
						return Mono.just(declared);
					}
					List<KeyValue> stored = txn.getGetResponses().get(0).getKvs();
					if (stored.isEmpty()) {
						return fix(client, declared);
					}
					PrefillTopology fixed = PrefillTopology.fromJson(Json.readObject(stored.get(0).getValue()
							.getBytes()));
					if (!fixed.sameShape(declared)) {
						log.warn("Registration declares {} but the instance {} is {} (fixed by its first registration)",
								declared, instance, fixed);
					}
					PrefillTopology filled = fixed.fillMissing(declared);
					if (filled == fixed) {
						return Mono.just(fixed);
					}
					// Only if nobody changed it meanwhile; a lost race means another server filled it already.
					return Mono.fromFuture(() -> client.getKVClient().txn()
							.If(new Cmp(info, Cmp.Op.EQUAL, CmpTarget.modRevision(stored.get(0).getModRevision())))
							.Then(Op.put(info, json(filled), PutOption.DEFAULT))
							.commit())
							.map(TxnResponse::isSucceeded)
							.thenReturn(filled);
				});
	}

	@Override
	public Mono<Snapshot> read(RankKey key) {
		ByteSequence info = bytes(keys.info(instance));
		ByteSequence ranks = bytes(keys.ranks(instance));
		return etcd.call("read " + instance, client -> Mono.fromFuture(() -> {
			Op[] reads = key == null
					? new Op[] { Op.get(info, GetOption.DEFAULT), count(ranks) }
					: new Op[] { Op.get(info, GetOption.DEFAULT), count(ranks), Op.get(bytes(keys.rank(instance,
							key.dpGroup(), key.cpRank(), key.tpRank(), key.ppRank())), GetOption.DEFAULT) };
			return client.getKVClient().txn().Then(reads).commit();
		}))
				.map(txn -> {
					List<KeyValue> stored = txn.getGetResponses().get(0).getKvs();
					PrefillTopology topology = stored.isEmpty() ? null
							: PrefillTopology.fromJson(Json.readObject(stored.get(0).getValue().getBytes()));
					int registered = (int) Math.min(Integer.MAX_VALUE, txn.getGetResponses().get(1).getCount());
					RankEndpoint endpoint = null;
					if (key != null && !txn.getGetResponses().get(2).getKvs().isEmpty()) {
						JsonNode value = Json.readObject(txn.getGetResponses().get(2).getKvs().get(0).getValue()
								.getBytes());
						endpoint = new RankEndpoint(Json.requiredString(value, BootstrapFields.RANK_IP),
								Json.requiredInt(value, BootstrapFields.RANK_PORT), BootstrapFields.parseIncarnation(
										Json.optionalString(value, BootstrapFields.INCARNATION)),
								BootstrapFields.parseEndpoints(Json.optionalString(value,
										BootstrapFields.MORE_ENDPOINTS)));
					}
					lastTopology = topology;
					lastRegistered = registered;
					return new Snapshot(topology, registered, endpoint);
				});
	}

	@Override
	public PrefillTopology topology() {
		return lastTopology;
	}

	@Override
	public int registeredCount() {
		return lastRegistered;
	}

	@Override
	public void dispose() {
		etcd.dispose();
	}

	@Override
	public boolean isDisposed() {
		return etcd.isDisposed();
	}

	private static Op count(ByteSequence prefix) {
		return Op.get(prefix, GetOption.builder().isPrefix(true).withCountOnly(true).build());
	}

	private static ByteSequence json(PrefillTopology topology) {
		return ByteSequence.from(Json.write(topology.toJson()));
	}

	private static ByteSequence bytes(String text) {
		return ByteSequence.from(text, StandardCharsets.UTF_8);
	}
}
