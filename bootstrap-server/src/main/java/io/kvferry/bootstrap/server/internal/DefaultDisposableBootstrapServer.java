package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.Objects;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.netty.channel.group.ChannelGroup;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;

/**
 * A running bootstrap server: Reactor Netty's server, its connections, the tables it serves, the periodic room-table
 * sweep and its gauges, disposed together. Thread-safe.
 */
public final class DefaultDisposableBootstrapServer implements DisposableBootstrapServer {

	private final DisposableServer server;
	private final ChannelGroup connections;
	private final RouteStore routes;
	private final HostPort address;
	private final boolean secure;
	private final Disposable sweeper;
	private final ConnectionLimit connectionLimit;

	/**
	 * @param server the bound HTTP server
	 * @param connections the server's connections (its configured channel group)
	 * @param routes its rank table
	 * @param address its bound address
	 * @param secure whether it speaks HTTPS
	 * @param sweeper what stops with the server: the periodic room-table sweep, the gauges
	 * @param connectionLimit the cap on its connections
	 */
	public DefaultDisposableBootstrapServer(DisposableServer server, ChannelGroup connections, RouteStore routes,
			HostPort address, boolean secure, Disposable sweeper, ConnectionLimit connectionLimit) {
		this.server = Objects.requireNonNull(server, "server");
		this.connections = Objects.requireNonNull(connections, "connections");
		this.routes = Objects.requireNonNull(routes, "routes");
		this.address = Objects.requireNonNull(address, "address");
		this.secure = secure;
		this.sweeper = Objects.requireNonNull(sweeper, "sweeper");
		this.connectionLimit = Objects.requireNonNull(connectionLimit, "connectionLimit");
		// However the channel closes (dispose, error), the sweep stops with it.
		server.onDispose(sweeper);
	}

	@Override
	public HostPort address() {
		return address;
	}

	@Override
	public boolean isSecure() {
		return secure;
	}

	@Override
	public String baseUrl() {
		return (secure ? "https://" : "http://") + address;
	}

	@Override
	public int registeredCount() {
		return routes.registeredCount();
	}

	/** @return the cap on this server's connections, with its counts */
	public ConnectionLimit connectionLimit() {
		return connectionLimit;
	}

	@Override
	public void dispose() {
		sweeper.dispose();
		server.dispose();
		// Reactor Netty's dispose() closes only the listening socket; kept-alive connections would go on serving.
		connections.close();
	}

	@Override
	public boolean isDisposed() {
		return server.isDisposed();
	}

	@Override
	public Mono<Void> onDispose() {
		return server.onDispose();
	}

	@Override
	public void disposeNow(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		sweeper.dispose();
		// With a channel group Reactor Netty lets in-flight requests finish (up to the timeout), then closes.
		server.disposeNow(timeout);
		connections.close();
	}

	@Override
	public String toString() {
		return "DisposableBootstrapServer{" + baseUrl() + ", registered=" + routes.registeredCount() + "}";
	}
}
