package io.kvferry.bootstrap.server;

import java.time.Duration;

import io.netty.handler.ssl.SslContext;
import org.jspecify.annotations.Nullable;

/**
 * What one {@link BootstrapServer} configuration holds: the server's own settings, and the routes it mounts. Mutated
 * only on a fresh copy, inside {@code BootstrapServer.with}, before it is shared.
 */
final class ServerSettings {

	String host = BootstrapServer.DEFAULT_HOST;
	int port = BootstrapServer.DEFAULT_PORT;
	Duration idleTimeout = BootstrapServer.DEFAULT_IDLE_TIMEOUT;
	Duration requestTimeout = BootstrapServer.DEFAULT_REQUEST_TIMEOUT;
	@Nullable SslContext sslContext;
	int maxConnections = BootstrapServer.DEFAULT_MAX_CONNECTIONS;
	int maxLingeringRefusals = BootstrapServer.DEFAULT_MAX_LINGERING_REFUSALS;
	int ioThreads = BootstrapServer.DEFAULT_IO_THREADS;
	BootstrapRoutes routes = BootstrapRoutes.create();

	ServerSettings copy() {
		ServerSettings copy = new ServerSettings();
		copy.host = host;
		copy.port = port;
		copy.idleTimeout = idleTimeout;
		copy.requestTimeout = requestTimeout;
		copy.sslContext = sslContext;
		copy.maxConnections = maxConnections;
		copy.maxLingeringRefusals = maxLingeringRefusals;
		copy.ioThreads = ioThreads;
		copy.routes = routes;
		return copy;
	}
}
