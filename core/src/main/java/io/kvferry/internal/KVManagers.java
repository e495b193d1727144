package io.kvferry.internal;

import io.kvferry.DecodeKVManager;
import io.kvferry.KVManagerConfig;
import io.kvferry.PrefillKVManager;
import reactor.core.publisher.Mono;

/** Starts the managers a configuration describes. */
public final class KVManagers {

	private KVManagers() {
	}

	/** @return the started prefill manager: listening, then registered */
	public static Mono<PrefillKVManager> prefill(KVManagerConfig config) {
		return DefaultPrefillKVManager.start(config);
	}

	/** @return the decode manager, ready at once */
	public static Mono<DecodeKVManager> decode(KVManagerConfig config) {
		return Mono.fromSupplier(() -> new DefaultDecodeKVManager(config));
	}
}
