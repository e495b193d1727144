package io.kvferry.harness;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The ranks of one {@link KVCluster}: for every rank of the prefill instance (by DP group, then CP, TP and PP) and of
 * the decode instance (by TP, then PP), its {@link ParallelLayout}, the managed memory laid out for it and the manager
 * started on that memory with the cluster's transport and bootstrap; and their closing, all together.
 */
final class ClusterRanks {

	private final KVClusterBuilder config;
	private final List<List<RankMemory>> prefillMemory = new ArrayList<>();
	private final List<List<PrefillKVManager>> prefill = new ArrayList<>();
	private final List<RankMemory> decodeMemory = new ArrayList<>();
	private final List<DecodeKVManager> decode = new ArrayList<>();

	ClusterRanks(KVClusterBuilder config) {
		this.config = config;
	}

	/** @return prefill managers by DP group, each group in (cp, tp, pp) order; null for one not started yet */
	List<List<PrefillKVManager>> prefill() {
		return prefill;
	}

	/** @return prefill memory by DP group, in the order of {@link #prefill()} */
	List<List<RankMemory>> prefillMemory() {
		return prefillMemory;
	}

	/** @return decode managers in (tp, pp) order; null for one not started yet */
	List<DecodeKVManager> decode() {
		return decode;
	}

	/** @return decode memory, in the order of {@link #decode()} */
	List<RankMemory> decodeMemory() {
		return decodeMemory;
	}

	/**
	 * Lays out every rank's memory and starts its manager, all at once.
	 *
	 * @return completes when every manager started
	 * @throws IllegalArgumentException when decode's DCP size does not divide its TP size
	 */
	Mono<Void> start() {
		// The builder's start refused a builder without these.
		KVTransport transport = Objects.requireNonNull(config.transport, "transport");
		BootstrapClient client = Objects.requireNonNull(config.client, "bootstrapClient");
		HostPort bootstrap = Objects.requireNonNull(config.bootstrap, "bootstrapAddress");
		List<Mono<? extends KVManager>> starts = new ArrayList<>();
		for (int g = 0; g < config.prefillDp; g++) {
			List<RankMemory> mems = new ArrayList<>();
			List<PrefillKVManager> mgrs = new ArrayList<>();
			prefillMemory.add(mems);
			prefill.add(mgrs);
			for (int cp = 0; cp < config.prefillCp; cp++) {
				for (int tp = 0; tp < config.prefillTp; tp++) {
					for (int pp = 0; pp < config.prefillPp; pp++) {
						ParallelLayout layout = new ParallelLayout(config.prefillTp, tp, config.prefillDp, g, 1, 0,
								config.prefillPp, pp, config.prefillCp, cp);
						// Every CP rank holds the whole room's KV (after CP's gather), so each is filled alike.
						RankMemory mem = RankMemory.prefill(config.prefillShape(), layout,
								config.prefillKvLayout, config.pagesOf(config.prefillShape()), config.rows,
								config.rows);
						mems.add(mem);
						mgrs.add(null);
						int slot = mgrs.size() - 1;
						PrefillSpec spec = custom(KVManagerSpec.prefill().kvArgs(mem.kvArgs()).layout(layout)
								.transport(transport).bootstrapClient(client)
								.bootstrapAddress(bootstrap).bindAddress(new HostPort(config.host, 0))
								.allCpRanksTransfer(config.allCpRanks).dsaCacheLayerSplit(config.dsaLayerSplit));
						starts.add(spec.start().doOnNext(m -> mgrs.set(slot, m)));
					}
				}
			}
		}
		for (int tp = 0; tp < config.decodeTp; tp++) {
			for (int pp = 0; pp < config.decodePp; pp++) {
				if (config.decodeTp % config.decodeDcp != 0) {
					throw new IllegalArgumentException("decodeDcp : " + config.decodeDcp + " (expected: a divisor of "
							+ "decode TP size " + config.decodeTp + ")");
				}
				ParallelLayout layout = new ParallelLayout(config.decodeTp, tp, 1, 0, 1, 0, config.decodePp, pp,
						config.decodeDcp, tp % config.decodeDcp);
				RankMemory mem = RankMemory.decode(config.decodeShape(), layout, config.decodeKvLayout,
						config.pagesOf(config.decodeShape()), config.rows, config.rows);
				decodeMemory.add(mem);
				decode.add(null);
				int slot = decode.size() - 1;
				DecodeSpec spec = custom(KVManagerSpec.decode().kvArgs(mem.kvArgs()).layout(layout)
						.transport(config.decodeTransport != null ? config.decodeTransport : transport)
						.bootstrapClient(client));
				starts.add(spec.start().doOnNext(m -> decode.set(slot, m)));
			}
		}
		return Flux.merge(starts).then();
	}

	/** The builder's customizer applies to both roles' specs; it returns a spec of the role it was given. */
	@SuppressWarnings("unchecked")
	private <S extends KVManagerSpec<S, ?>> S custom(S spec) {
		return (S) config.customizer.apply(spec);
	}

	/** Closes every manager started so far; completes when they are released. */
	Mono<Void> close() {
		return Mono.defer(() -> {
			List<KVManager> all = new ArrayList<>();
			prefill.forEach(all::addAll);
			all.addAll(decode);
			List<Mono<Void>> released = new ArrayList<>();
			for (KVManager m : all) {
				if (m != null) {
					m.dispose();
					released.add(m.onDispose());
				}
			}
			return Mono.when(released);
		});
	}
}
