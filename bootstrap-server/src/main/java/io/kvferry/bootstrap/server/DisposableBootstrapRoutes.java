package io.kvferry.bootstrap.server;

import java.util.function.Consumer;

import reactor.core.Disposable;
import reactor.netty.http.server.HttpServerRoutes;

/**
 * Started bootstrap routes ({@link BootstrapRoutes#start()}): their tables, metrics and sweep, and what mounts them on
 * a Reactor Netty server. Mount them with {@code HttpServer.route(routes -> { ...; bootstrap.accept(routes); })}, or
 * {@code HttpServer.route(bootstrap.andThen(routes -> ...))}, on as many servers as wanted: every server answers from
 * the same tables.
 * <p>
 * Thread-safe. {@link #dispose()} never blocks.
 *
 * @since 0.1
 */
public interface DisposableBootstrapRoutes extends Consumer<HttpServerRoutes>, Disposable {

	/**
	 * Adds SGLang's bootstrap paths to {@code routes}: {@code /route} ({@code GET}, {@code PUT}),
	 * {@code /register_dp_rank} and {@code /query_dp_ranks} ({@code POST}). Every method on those paths is theirs (405
	 * with {@code Allow} for the others), as is a request whose path is one of them once percent-decoded; nothing
	 * else is. Reactor Netty tries routes in the order they were added: a route added before these on the same path
	 * wins.
	 *
	 * @param routes the server's routes
	 * @throws IllegalStateException when these routes were disposed
	 */
	@Override
	void accept(HttpServerRoutes routes);

	/** @return how many distinct prefill ranks have registered (re-registrations of a rank count once) */
	int registeredCount();

	/**
	 * Stops the sweep of expired room entries, removes the gauges and closes the etcd client, if any. Dispose after
	 * the servers the routes are mounted on have stopped. Idempotent.
	 */
	@Override
	void dispose();

	/** @return whether {@link #dispose()} was called */
	@Override
	boolean isDisposed();
}
