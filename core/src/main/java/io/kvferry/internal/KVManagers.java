package io.kvferry.internal;

import java.util.function.BiFunction;

import io.kvferry.DecodeConfig;
import io.kvferry.DecodeKVManager;
import io.kvferry.KVManager;
import io.kvferry.KVManagerConfig;
import io.kvferry.PrefillConfig;
import io.kvferry.PrefillKVManager;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;

/**
 * Starts the managers a configuration describes, each after its transport registered the rank's regions; the
 * registration is released once the manager closed (its connections no longer touch the regions). A decode manager
 * that re-registers its regions swaps the registration it holds for the new one, releasing the old.
 */
public final class KVManagers {

	private KVManagers() {
	}

	/** @return the started prefill manager: listening, then registered */
	public static Mono<PrefillKVManager> prefill(PrefillConfig config) {
		return registered(config, (c, regions) -> DefaultPrefillKVManager.start(c));
	}

	/** @return the decode manager, ready once its regions are registered */
	public static Mono<DecodeKVManager> decode(DecodeConfig config) {
		return registered(config, (c, regions) -> Mono.fromSupplier(() -> new DefaultDecodeKVManager(c, regions)));
	}

	private static <C extends KVManagerConfig, M extends KVManager> Mono<M> registered(C config,
			BiFunction<C, Disposable.Swap, Mono<M>> start) {
		return config.transport().register(Reregistration.regions(config.kvArgs())).flatMap(registration -> {
			Disposable.Swap regions = Disposables.swap();
			regions.update(registration);
			return start.apply(config, regions)
					.doOnNext(m -> m.onDispose().subscribe(null, e -> regions.dispose(), regions::dispose))
					.doOnError(e -> regions.dispose())
					.doOnCancel(regions::dispose);
		});
	}

}
