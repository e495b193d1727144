package io.kvferry.bootstrap.server;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeoutException;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.internal.ConnectionLimit;
import io.kvferry.bootstrap.server.internal.DefaultDisposableBootstrapRoutes;
import io.kvferry.bootstrap.server.internal.DefaultDisposableBootstrapServer;
import io.kvferry.bootstrap.server.internal.HttpLoops;
import io.kvferry.bootstrap.server.internal.RequestReadTimeout;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.GlobalEventExecutor;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.LoopResources;

/**
 * What binding a {@link BootstrapServer} configuration builds: its {@link BootstrapRoutes}, started (the tables, their
 * sweep, metrics), mounted as any server mounts them, and behind them the standalone server's own paths
 * ({@code /health}, {@code /metrics}, 404 for the rest); the server's own event loops, its connection limits and
 * timeouts. Each call builds all of them anew.
 */
final class ServerBinding {

	private ServerBinding() {
	}

	/**
	 * Binds and waits, for {@code BootstrapServer.bindNow}: blocking, never on an event loop.
	 *
	 * @param settings a configuration, not mutated any more
	 * @param timeout how long to wait, positive
	 * @return the running server
	 * @throws IllegalStateException naming the address when binding did not finish in time
	 */
	static DisposableBootstrapServer bindNow(ServerSettings settings, Duration timeout) {
		ServerSettings.positive("timeout", timeout);
		try {
			return Objects.requireNonNull(Mono.defer(() -> bind(settings)).timeout(timeout).block(), "bound server");
		}
		catch (RuntimeException e) {
			if (e.getCause() instanceof TimeoutException) {
				throw new IllegalStateException("bootstrap server on " + new HostPort(settings.host, settings.port)
						+ " could not be bound within " + timeout.toMillis() + " ms", e);
			}
			throw e;
		}
	}

	/**
	 * @param settings a configuration, not mutated any more
	 * @return emits the running server, or the bind failure once what was built for it is released
	 */
	static Mono<DisposableBootstrapServer> bind(ServerSettings settings) {
		DefaultDisposableBootstrapRoutes routes = settings.routes.startDefault();
		// Tracks this server's connections so that disposing it closes them too, not only the listening socket.
		ChannelGroup connections = new DefaultChannelGroup("kvferry-bootstrap", GlobalEventExecutor.INSTANCE);
		ConnectionLimit limit = new ConnectionLimit(settings.maxConnections, settings.maxLingeringRefusals);
		LoopResources loops = HttpLoops.create("kvferry-bootstrap", settings.ioThreads);
		HttpServer http = HttpServer.create()
				.runOn(loops)
				.host(settings.host)
				.port(settings.port)
				.channelGroup(connections)
				.idleTimeout(settings.idleTimeout)
				// Not Reactor Netty's requestTimeout: it starts after the headers, so it misses trickled headers.
				.doOnChannelInit((observer, channel, remote) -> {
					RequestReadTimeout.install(channel.pipeline(), settings.requestTimeout);
					limit.admit(channel);
				})
				// The same routes as on an engine's server; the handler also answers every other path, as the
				// standalone server always has.
				.route(routes.andThen(r -> r.route(request -> true, routes.handler())));
		SslContext sslContext = settings.sslContext;
		if (sslContext != null) {
			Duration maxHandshake = BootstrapServer.MAX_TLS_HANDSHAKE_TIMEOUT;
			Duration handshakeTimeout = settings.requestTimeout.compareTo(maxHandshake) < 0 ? settings.requestTimeout
					: maxHandshake;
			http = http.secure(spec -> spec.sslContext(sslContext).handshakeTimeout(handshakeTimeout));
		}
		return http.bind()
				.doOnError(e -> routes.dispose())
				.onErrorResume(e -> loops.disposeLater().then(Mono.error(e)))
				.map(server -> {
					Disposable connectionGauges = routes.metrics().registerConnectionGauges(limit);
					InetSocketAddress bound = (InetSocketAddress) server.address();
					HostPort address = new HostPort(bound.getAddress().getHostAddress(), bound.getPort());
					return (DisposableBootstrapServer) new DefaultDisposableBootstrapServer(server, connections,
							routes, address, settings.sslContext != null,
							Disposables.composite(connectionGauges, routes), limit, loops);
				});
	}
}
