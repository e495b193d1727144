package io.kvferry.bootstrap.server.internal;

import java.util.Objects;

import io.kvferry.bootstrap.server.DisposableBootstrapRoutes;
import reactor.core.Disposable;
import reactor.netty.http.server.HttpServerRoutes;

/**
 * Started bootstrap routes: the HTTP handler, the tables it serves and what stops with them (the room-table sweep,
 * the gauges, the store's client). Thread-safe.
 */
public final class DefaultDisposableBootstrapRoutes implements DisposableBootstrapRoutes {

	private final BootstrapHttpHandler handler;
	private final RouteStore routes;
	private final ServerMetrics metrics;
	private final Disposable resources;

	/**
	 * @param handler the handler of the bootstrap paths (and of the standalone server's other paths)
	 * @param routes its rank table
	 * @param metrics where it counts
	 * @param resources what stops with the routes: the sweep, the gauges, the rank table
	 */
	public DefaultDisposableBootstrapRoutes(BootstrapHttpHandler handler, RouteStore routes, ServerMetrics metrics,
			Disposable resources) {
		this.handler = Objects.requireNonNull(handler, "handler");
		this.routes = Objects.requireNonNull(routes, "routes");
		this.metrics = Objects.requireNonNull(metrics, "metrics");
		this.resources = Objects.requireNonNull(resources, "resources");
	}

	@Override
	public void accept(HttpServerRoutes serverRoutes) {
		Objects.requireNonNull(serverRoutes, "routes");
		if (resources.isDisposed()) {
			throw new IllegalStateException("bootstrap routes disposed (expected: routes from a new start())");
		}
		serverRoutes.route(BootstrapHttpHandler::isBootstrapPath, handler);
	}

	/** @return the handler, which the standalone server also gives the paths that are not the bootstrap's */
	public BootstrapHttpHandler handler() {
		return handler;
	}

	/** @return where the routes count */
	public ServerMetrics metrics() {
		return metrics;
	}

	@Override
	public int registeredCount() {
		return routes.registeredCount();
	}

	@Override
	public void dispose() {
		resources.dispose();
	}

	@Override
	public boolean isDisposed() {
		return resources.isDisposed();
	}

	@Override
	public String toString() {
		return "DisposableBootstrapRoutes{registered=" + routes.registeredCount() + (isDisposed() ? ", disposed" : "")
				+ "}";
	}
}
