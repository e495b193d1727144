package io.kvferry.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import io.kvferry.DecodeConfig;
import io.kvferry.DecodeKVManager;
import io.kvferry.KVArgs;
import io.kvferry.KVManager;
import io.kvferry.KVManagerConfig;
import io.kvferry.MemoryRegion;
import io.kvferry.PrefillConfig;
import io.kvferry.PrefillKVManager;
import reactor.core.publisher.Mono;

/**
 * Starts the managers a configuration describes, each after its transport registered the rank's regions; the
 * registration is released once the manager closed (its connections no longer touch the regions).
 */
public final class KVManagers {

	private KVManagers() {
	}

	/** @return the started prefill manager: listening, then registered */
	public static Mono<PrefillKVManager> prefill(PrefillConfig config) {
		return registered(config, c -> DefaultPrefillKVManager.start(c));
	}

	/** @return the decode manager, ready once its regions are registered */
	public static Mono<DecodeKVManager> decode(DecodeConfig config) {
		return registered(config, c -> Mono.fromSupplier(() -> new DefaultDecodeKVManager(c)));
	}

	private static <C extends KVManagerConfig, M extends KVManager> Mono<M> registered(C config,
			Function<C, Mono<M>> start) {
		return config.transport().register(regions(config.kvArgs())).flatMap(registration -> start.apply(config)
				.doOnNext(m -> m.onDispose().subscribe(null, e -> registration.dispose(), registration::dispose))
				.doOnError(e -> registration.dispose())
				.doOnCancel(registration::dispose));
	}

	private static List<MemoryRegion> regions(KVArgs args) {
		List<MemoryRegion> all = new ArrayList<>(args.kvRegions());
		all.addAll(args.auxRegions());
		all.addAll(args.stateRegions());
		return all;
	}
}
