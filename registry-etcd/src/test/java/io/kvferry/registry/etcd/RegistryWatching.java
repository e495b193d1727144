package io.kvferry.registry.etcd;

import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.bootstrap.RegistryChange;
import reactor.core.publisher.Flux;

/**
 * A registry watch that acts once etcd established it. Subscribing to {@link EtcdBootstrapClient#changes()} and then
 * changing a key races the watch's first read: a change made before that read is part of what it reads, and is never
 * reported.
 */
final class RegistryWatching {

	private RegistryWatching() {
	}

	/**
	 * @param action run once, on etcd's thread, when the watch is established; it must not block
	 * @return the changes seen by a watch of {@code client}'s own
	 */
	static Flux<RegistryChange> changesThen(EtcdBootstrapClient client, Runnable action) {
		return Flux.defer(() -> {
			AtomicBoolean once = new AtomicBoolean();
			return client.changes(() -> {
				if (once.compareAndSet(false, true)) {
					action.run();
				}
			});
		});
	}
}
