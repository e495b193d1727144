package io.kvferry;

import java.time.Duration;

import org.jspecify.annotations.Nullable;
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
 * and waits. {@link #drain(Duration)} lets the rooms in flight end first, for a restart that fails no room it holds.
 */
public interface KVManager extends Disposable {

	/** @return which side of the pair this manager serves */
	DisaggregationMode mode();

	/** @return the regions rooms land in (or are read from) now: a decode manager's re-registration replaces them */
	KVArgs kvArgs();

	ParallelLayout layout();

	/**
	 * A random id drawn when the manager was built, never 0: a rank that restarts on the same host and port is a new
	 * peer with another incarnation. Prefill publishes it with its registration, both sides send it in their
	 * handshake, and a peer that comes back with another one replaces the old one at once (the old one's rooms fail
	 * with {@link FailureCause#PEER_RESTARTED}).
	 *
	 * @return this manager's incarnation
	 */
	long incarnation();

	/** @return the state of {@code room}, or null when the manager does not know it (never opened, or ended) */
	@Nullable KVPoll status(long room);

	/**
	 * Every state change of every room, hot: a subscriber sees changes from its subscription on, on the callback
	 * scheduler. A subscriber that cannot keep up loses the oldest buffered events beyond the configured buffer (it
	 * never slows transfers); a sender's or receiver's {@code states()} never loses its room's terminal state.
	 */
	Flux<KVStatusEvent> events();

	/** @return the manager's counters since it started */
	KVStats stats();

	/**
	 * Drains the manager, lazily: on subscription it stops admitting new rooms and completes once every room it held
	 * ended. A new room fails at once with {@link FailureCause#DRAINING} and a reason that names this manager (a
	 * prefill manager also withdraws its registration and tells every connected decode rank, which then fails new
	 * rooms for this rank with the same cause instead of waiting for a timeout). Rooms still live when
	 * {@code deadline} passes are aborted with {@link FailureCause#DRAINING}; the Mono completes once they ended.
	 * Draining does not close the manager: {@link #dispose()} it afterwards. Subscribing again (or to another drain)
	 * keeps draining and waits again, with its own deadline. Never errors.
	 *
	 * @param deadline how long rooms in flight may take before they are aborted; zero aborts them at once
	 * @return completes when the last room ended, on the callback scheduler
	 * @throws IllegalArgumentException for a negative deadline
	 */
	Mono<Void> drain(Duration deadline);

	/** @return whether {@link #drain(Duration)} was subscribed: new rooms fail with {@link FailureCause#DRAINING} */
	boolean isDraining();

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
