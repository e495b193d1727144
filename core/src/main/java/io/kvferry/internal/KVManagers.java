package io.kvferry.internal;

import io.kvferry.DisaggregationMode;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import reactor.core.publisher.Mono;

/** Starts the manager a spec describes. */
public final class KVManagers {

	private KVManagers() {
	}

	/**
	 * @param spec a validated spec
	 * @return the started manager
	 */
	public static Mono<KVManager> start(KVManagerSpec spec) {
		if (spec.mode() == DisaggregationMode.PREFILL) {
			return PrefillKVManager.start(spec);
		}
		return Mono.fromSupplier(() -> new DecodeKVManager(spec));
	}
}
