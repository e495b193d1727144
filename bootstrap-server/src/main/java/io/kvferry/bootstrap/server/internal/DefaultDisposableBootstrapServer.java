package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.Objects;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.DisposableBootstrapRoutes;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.netty.channel.group.ChannelGroup;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.resources.LoopResources;

/**
 * A running bootstrap server: Reactor Netty's server, its connections, the routes it serves (their tables, the
 * periodic room-table sweep, their gauges), and its own event loops, disposed together (the loops last, once the connections closed).
 * Thread-safe.
 */
public final class DefaultDisposableBootstrapServer implements DisposableBootstrapServer {

	// Its connections are closed by then: the loops have nothing left to finish.
	private static final Duration LOOP_SHUTDOWN = Duration.ofSeconds(2);

	private final DisposableServer server;
	private final ChannelGroup connections;
	private final DisposableBootstrapRoutes routes;
	private final HostPort address;
	private final boolean secure;
	private final Disposable sweeper;
	private final ConnectionLimit connectionLimit;
	private final LoopResources loops;

	/**
	 * @param server the bound HTTP server
	 * @param connections the server's connections (its configured channel group)
	 * @param routes the routes it serves
	 * @param address its bound address
	 * @param secure whether it speaks HTTPS
	 * @param sweeper what stops with the server: its routes (their tables' sweep, their gauges), its connection
	 *        gauges
	 * @param connectionLimit the cap on its connections
	 * @param loops the server's own event loops
	 */
	public DefaultDisposableBootstrapServer(DisposableServer server, ChannelGroup connections,
			DisposableBootstrapRoutes routes,
			HostPort address, boolean secure, Disposable sweeper, ConnectionLimit connectionLimit,
			LoopResources loops) {
		this.server = Objects.requireNonNull(server, "server");
		this.connections = Objects.requireNonNull(connections, "connections");
		this.routes = Objects.requireNonNull(routes, "routes");
		this.address = Objects.requireNonNull(address, "address");
		this.secure = secure;
		this.sweeper = Objects.requireNonNull(sweeper, "sweeper");
		this.connectionLimit = Objects.requireNonNull(connectionLimit, "connectionLimit");
		this.loops = Objects.requireNonNull(loops, "loops");
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
		connections.close().addListener(f -> loops.disposeLater(Duration.ZERO, LOOP_SHUTDOWN).subscribe());
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
		connections.close().awaitUninterruptibly(timeout.toMillis());
		loops.disposeLater(Duration.ZERO, LOOP_SHUTDOWN).subscribe();
	}

	@Override
	public String toString() {
		return "DisposableBootstrapServer{" + baseUrl() + ", registered=" + routes.registeredCount() + "}";
	}
}
