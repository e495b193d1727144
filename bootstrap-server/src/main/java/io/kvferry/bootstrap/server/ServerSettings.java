package io.kvferry.bootstrap.server;

import java.time.Duration;
import java.util.Objects;

import io.netty.handler.ssl.SslContext;
import org.jspecify.annotations.Nullable;

/**
 * What one {@link BootstrapServer} configuration holds: the server's own settings, and the routes it mounts. Mutated
 * only on a fresh copy, inside {@code BootstrapServer.with}, before it is shared. The server's own settings are set
 * through checks that refuse a value it could not run with, each throwing an {@link IllegalArgumentException} that
 * names the setting, the value and what was expected; the routes check theirs.
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

	/** @param host an IP literal (IPv6 with or without brackets) or a hostname; kept without brackets */
	void host(String host) {
		Objects.requireNonNull(host, "host");
		String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
		if (h.isBlank()) {
			throw new IllegalArgumentException("host : '" + host + "' (expected: an IP address or hostname)");
		}
		this.host = h;
	}

	/** @param port 0..65535, 0 for any free port */
	void port(int port) {
		if (port < 0 || port > 65535) {
			throw new IllegalArgumentException("port : " + port + " (expected: 0..65535)");
		}
		this.port = port;
	}

	/** @param idleTimeout positive */
	void idleTimeout(Duration idleTimeout) {
		this.idleTimeout = positive("idleTimeout", idleTimeout);
	}

	/** @param requestTimeout positive */
	void requestTimeout(Duration requestTimeout) {
		this.requestTimeout = positive("requestTimeout", requestTimeout);
	}

	/** @param sslContext a server context, from {@code SslContextBuilder.forServer(..)} */
	void sslContext(SslContext sslContext) {
		Objects.requireNonNull(sslContext, "sslContext");
		if (!sslContext.isServer()) {
			throw new IllegalArgumentException("sslContext : a client context (expected: a server context from "
					+ "SslContextBuilder.forServer(..))");
		}
		this.sslContext = sslContext;
	}

	/** @param maxConnections at least 1 */
	void maxConnections(int maxConnections) {
		this.maxConnections = atLeast("maxConnections", maxConnections, 1);
	}

	/** @param maxLingeringRefusals at least 0: none lingers, a refused connection is closed at once */
	void maxLingeringRefusals(int maxLingeringRefusals) {
		this.maxLingeringRefusals = atLeast("maxLingeringRefusals", maxLingeringRefusals, 0);
	}

	/** @param ioThreads at least 1 */
	void ioThreads(int ioThreads) {
		this.ioThreads = atLeast("ioThreads", ioThreads, 1);
	}

	/**
	 * @return {@code value}, when it is positive
	 * @throws IllegalArgumentException naming {@code name} when it is zero or negative
	 */
	static Duration positive(String name, Duration value) {
		Objects.requireNonNull(value, name);
		if (value.isNegative() || value.isZero()) {
			throw new IllegalArgumentException(name + " : " + value + " (expected: > 0)");
		}
		return value;
	}

	private static int atLeast(String name, int value, int min) {
		if (value < min) {
			throw new IllegalArgumentException(name + " : " + value + " (expected: >= " + min + ")");
		}
		return value;
	}

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
