package io.kvferry.bootstrap.server;

import java.time.Duration;

import io.kvferry.HostPort;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A bound, running bootstrap server, as returned by {@link BootstrapServer#bind()}.
 * <pre>{@code
 * DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
 * HostPort address = server.address();   // the real port
 * ...
 * server.disposeNow();
 * }</pre>
 * <p>
 * Thread-safe. {@link #dispose()} and {@link #onDispose()} never block; {@link #disposeNow()} blocks and so must not be
 * called on an event loop (use it from {@code main}, a shutdown hook or a test).
 *
 * @since 0.1
 */
public interface DisposableBootstrapServer extends Disposable {

	/** How long {@link #disposeNow()} waits for the server to close. */
	Duration DEFAULT_DISPOSE_TIMEOUT = Duration.ofSeconds(3);

	/**
	 * @return the address the server listens on, with the real port when it was bound on port 0 (the host is the
	 *         bound IP address, e.g. {@code 0.0.0.0} for a wildcard bind)
	 */
	HostPort address();

	/** @return whether the server speaks HTTPS ({@link BootstrapServer#secure}) rather than plain HTTP */
	boolean isSecure();

	/**
	 * @return {@code http://host:port} or, when {@link #isSecure() secure}, {@code https://host:port}, IPv6 bracketed;
	 *         the host is the bound IP address as in {@link #address()}
	 */
	String baseUrl();

	/** @return how many distinct prefill ranks have registered (re-registrations of a rank count once) */
	int registeredCount();

	/**
	 * Stops listening and closes open connections (in-flight requests included), without waiting. Idempotent.
	 */
	@Override
	void dispose();

	/** @return whether {@link #dispose()} was called or the server channel closed */
	@Override
	boolean isDisposed();

	/**
	 * @return a {@link Mono} that completes when the server's listening socket has closed, whoever closed it
	 */
	Mono<Void> onDispose();

	/**
	 * Stops listening, lets in-flight requests finish for up to {@link #DEFAULT_DISPOSE_TIMEOUT}, then closes every
	 * connection. Blocking: not for event loops.
	 *
	 * @throws IllegalStateException when it did not close in time
	 */
	default void disposeNow() {
		disposeNow(DEFAULT_DISPOSE_TIMEOUT);
	}

	/**
	 * Stops listening, lets in-flight requests finish for up to {@code timeout}, then closes every connection.
	 * Blocking: not for event loops.
	 *
	 * @param timeout how long to wait, positive
	 * @throws IllegalStateException when it did not close in time
	 */
	void disposeNow(Duration timeout);
}
