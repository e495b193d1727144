package io.kvferry.bootstrap.server;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.internal.BootstrapHttpHandler;
import io.kvferry.bootstrap.server.internal.ConnectionLimit;
import io.kvferry.bootstrap.server.internal.DefaultDisposableBootstrapServer;
import io.kvferry.bootstrap.server.internal.EtcdStoreSupport;
import io.kvferry.bootstrap.server.internal.RequestReadTimeout;
import io.kvferry.bootstrap.server.internal.RoomDpRankTable;
import io.kvferry.bootstrap.server.internal.RouteStore;
import io.kvferry.bootstrap.server.internal.RouteTable;
import io.kvferry.bootstrap.server.internal.ServerMetrics;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.LoopResources;

/**
 * What binding a {@link BootstrapServer} configuration builds: the route store (in memory or in etcd), the room → DP
 * rank table, metrics, the HTTP handler, the server's own event loops, its connection limits and timeouts, and the
 * periodic sweep of expired rooms. Each call builds all of them anew.
 */
final class ServerBinding {

	private ServerBinding() {
	}

	/**
	 * @param settings a configuration, not mutated any more
	 * @return emits the running server, or the bind failure once what was built for it is released
	 */
	static Mono<DisposableBootstrapServer> bind(ServerSettings settings) {
		if (settings.etcdEndpoints == null && settings.etcdAccess.isSet()) {
			return Mono.error(new IllegalStateException("etcdTls / etcdCredentials without etcdRegistry (expected: "
					+ "etcdRegistry(endpoints, instance) too)"));
		}
		RouteStore routes = settings.etcdEndpoints == null ? new RouteTable()
				: EtcdStoreSupport.open(settings.etcdEndpoints, settings.instance, settings.etcdAccess);
		RoomDpRankTable rooms = new RoomDpRankTable(settings.dpRankEntryLifetime, settings.maxDpRankEntries,
				System::nanoTime);
		ServerMetrics metrics = settings.meterRegistry == null ? ServerMetrics.none()
				: ServerMetrics.of(settings.meterRegistry);
		BootstrapHttpHandler handler = new BootstrapHttpHandler(routes, rooms, settings.maxBodyBytes,
				settings.authToken, metrics);
		// Tracks this server's connections so that disposing it closes them too, not only the listening socket.
		ChannelGroup connections = new DefaultChannelGroup("kvferry-bootstrap", GlobalEventExecutor.INSTANCE);
		ConnectionLimit limit = new ConnectionLimit(settings.maxConnections, settings.maxLingeringRefusals);
		LoopResources loops = LoopResources.create("kvferry-bootstrap", 1, settings.ioThreads, true);
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
				.handle(handler);
		if (settings.sslContext != null) {
			Duration maxHandshake = BootstrapServer.MAX_TLS_HANDSHAKE_TIMEOUT;
			Duration handshakeTimeout = settings.requestTimeout.compareTo(maxHandshake) < 0 ? settings.requestTimeout
					: maxHandshake;
			http = http.secure(spec -> spec.sslContext(settings.sslContext).handshakeTimeout(handshakeTimeout));
		}
		return http.bind()
				.doOnError(e -> routes.dispose())
				.onErrorResume(e -> loops.disposeLater().then(Mono.error(e)))
				.map(server -> {
					Disposable sweeper = Schedulers.parallel().schedulePeriodically(rooms::sweep,
							settings.dpRankEntryLifetime.toMillis(), settings.dpRankEntryLifetime.toMillis(),
							TimeUnit.MILLISECONDS);
					Disposable gauges = metrics.registerGauges(routes, rooms, limit);
					InetSocketAddress bound = (InetSocketAddress) server.address();
					HostPort address = new HostPort(bound.getAddress().getHostAddress(), bound.getPort());
					return (DisposableBootstrapServer) new DefaultDisposableBootstrapServer(server, connections,
							routes, address, settings.sslContext != null,
							Disposables.composite(sweeper, gauges, routes),
							limit, loops);
				});
	}
}
