package io.kvferry.spi;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;

/**
 * What a transport or client builds on first use and gives up once: its event loops, its HTTP pool, its etcd client.
 * Empty until the first {@link #get}, then the resource, then disposed for good; the disposal is written once and no
 * resource is built after it. Threads that race to build it each build one, one wins and the others' are discarded
 * unused. Lock-free; any thread.
 *
 * @param <T> the resource
 */
public final class LazyResource<T> {

	/** What the state holds once disposed: the resource built before, if any, which the disposer ends. */
	private record Disposed(@Nullable Object resource) {
	}

	private final Supplier<? extends RuntimeException> disposedError;
	// Null, then the resource, then a Disposed.
	private final AtomicReference<@Nullable Object> state;

	/**
	 * @param given a resource there from the start (the caller's), or null to build one on first use
	 * @param disposedError what {@link #get} throws once disposed
	 */
	public LazyResource(@Nullable T given, Supplier<? extends RuntimeException> disposedError) {
		this.disposedError = Objects.requireNonNull(disposedError, "disposedError");
		this.state = new AtomicReference<>(given);
	}

	/**
	 * @param create builds the resource; may run on several racing threads, and again after a lost race
	 * @param discard ends a resource built in a race that another thread won, or after the disposal
	 * @return the resource, built now if none was
	 * @throws RuntimeException the disposed error, once disposed
	 */
	@SuppressWarnings("unchecked")
	public T get(Supplier<? extends T> create, Consumer<? super T> discard) {
		for (;;) {
			Object current = state.get();
			if (current instanceof Disposed) {
				throw disposedError.get();
			}
			if (current != null) {
				return (T) current;
			}
			T created = create.get();
			if (state.compareAndSet(null, created)) {
				return created;
			}
			discard.accept(created);
		}
	}

	/** @return the resource, or null before the first build; after the disposal, the one built before it, if any */
	@SuppressWarnings("unchecked")
	public @Nullable T peek() {
		Object current = state.get();
		return (T) (current instanceof Disposed d ? d.resource() : current);
	}

	/**
	 * Disposes: later {@link #get}s throw, and {@link #peek} keeps the resource built before, for the caller to end.
	 * Idempotent.
	 *
	 * @return true on the first call only: the caller that gets it ends the resource
	 */
	public boolean dispose() {
		for (;;) {
			Object current = state.get();
			if (current instanceof Disposed) {
				return false;
			}
			if (state.compareAndSet(current, new Disposed(current))) {
				return true;
			}
		}
	}

	/** @return whether {@link #dispose()} was called */
	public boolean isDisposed() {
		return state.get() instanceof Disposed;
	}
}
