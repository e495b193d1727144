package io.kvferry;

import java.time.Duration;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * What every rank's KV transfer manager offers, whatever its role: its rooms' states and counters, and its lifecycle.
 * A prefill rank's manager is a {@link PrefillKVManager}, a decode rank's a {@link DecodeKVManager}; both are built by
 * {@link KVManagerSpec}.
 *
 * <p>Lifecycle: {@link #dispose()} starts closing without waiting (every live room fails, connections and the
 * listener close); {@link #onDispose()} completes once everything is released; {@link #disposeNow(Duration)} does both
 * and waits.
 */
public interface KVManager extends Disposable {

	/** @return which side of the pair this manager serves */
	DisaggregationMode mode();

	KVArgs kvArgs();

	ParallelLayout layout();

	/** @return the state of {@code room}, or null when the manager does not know it (never opened, or ended) */
	KVPoll status(long room);

	/**
	 * Every state change of every room, hot: a subscriber sees changes from its subscription on, on the callback
	 * scheduler. A subscriber that cannot keep up loses the oldest buffered events beyond the configured buffer (it
	 * never slows transfers); a sender's or receiver's {@code states()} never loses its room's terminal state.
	 */
	Flux<KVStatusEvent> events();

	/** @return the manager's counters since it started */
	KVStats stats();

	/**
	 * @return completes once the manager is closed and released everything: connections closed (no transport reads or
	 *         writes registered memory for it any more) and the listener unbound; never errors
	 */
	Mono<Void> onDispose();

	/**
	 * Closes the manager and waits until {@link #onDispose()} completes.
	 *
	 * @throws KVFerryException when that takes longer than {@code timeout}
	 */
	default void disposeNow(Duration timeout) {
		dispose();
		try {
			onDispose().block(timeout);
		}
		catch (IllegalStateException e) {
			throw new KVFerryException(this + " did not close within " + timeout, e);
		}
	}
}
