package io.kvferry.bootstrap.server;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.internal.BootstrapHttpHandler;
import io.kvferry.bootstrap.server.internal.DefaultDisposableBootstrapServer;
import io.kvferry.bootstrap.server.internal.RoomDpRankTable;
import io.kvferry.bootstrap.server.internal.RouteTable;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.server.HttpServer;

/**
 * An SGLang-compatible bootstrap server, configured immutably: every setter returns a new {@code BootstrapServer} and
 * leaves this one unchanged, so a configuration can be shared and bound any number of times.
 * <pre>{@code
 * DisposableBootstrapServer server = BootstrapServer.create()
 *         .host("127.0.0.1")
 *         .port(0)                    // any free port
 *         .maxBodyBytes(64 * 1024)    // 413 beyond
 *         .bindNow();
 * HostPort address = server.address();
 * server.disposeNow();
 * }</pre>
 * Prefill ranks register with {@code PUT /route}; decode ranks read the instance's sizes and each rank's endpoint with
 * {@code GET /route}, in the seed's protocol ({@code engine_rank}, {@code target_dp_group}, {@code target_pp_rank}) or
 * today's SGLang protocol ({@code prefill_dp_rank}, {@code prefill_cp_rank}, {@code target_tp_rank},
 * {@code target_pp_rank}); {@code POST /register_dp_rank} and {@code POST /query_dp_ranks} keep the room → DP rank
 * table; {@code GET /health} answers {@code OK}. Every bound server has its own tables.
 * <p>
 * Thread-safe. The server runs on Reactor Netty's shared event loops and never blocks them; {@link #bindNow()} blocks
 * the caller and is meant for {@code main} and tests.
 *
 * @since 0.1
 */
public final class BootstrapServer {

	/** Default host: every interface, as SGLang's default. */
	public static final String DEFAULT_HOST = "0.0.0.0";

	/** Default port: SGLang's {@code --disaggregation-bootstrap-port}. */
	public static final int DEFAULT_PORT = 8998;

	/** Default largest request body; registrations are a few hundred bytes. */
	public static final int DEFAULT_MAX_BODY_BYTES = 64 * 1024;

	/** Default time after which an idle connection is closed. */
	public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);

	/** Default time a room → DP rank entry is answered (SGLang's cleanup interval). */
	public static final Duration DEFAULT_DP_RANK_ENTRY_LIFETIME = Duration.ofSeconds(120);

	/** How long {@link #bindNow()} waits for the socket to be bound. */
	public static final Duration DEFAULT_BIND_TIMEOUT = Duration.ofSeconds(45);

	// Bounds the time a client may take to send one request (slow senders would otherwise hold a connection).
	private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

	private static final BootstrapServer DEFAULT = new BootstrapServer(DEFAULT_HOST, DEFAULT_PORT,
			DEFAULT_MAX_BODY_BYTES, DEFAULT_IDLE_TIMEOUT, DEFAULT_DP_RANK_ENTRY_LIFETIME, null);

	private final String host;
	private final int port;
	private final int maxBodyBytes;
	private final Duration idleTimeout;
	private final Duration dpRankEntryLifetime;
	private final String authToken;

	private BootstrapServer(String host, int port, int maxBodyBytes, Duration idleTimeout,
			Duration dpRankEntryLifetime, String authToken) {
		this.host = host;
		this.port = port;
		this.maxBodyBytes = maxBodyBytes;
		this.idleTimeout = idleTimeout;
		this.dpRankEntryLifetime = dpRankEntryLifetime;
		this.authToken = authToken;
	}

	/**
	 * @return a server configured with the defaults ({@link #DEFAULT_HOST}, {@link #DEFAULT_PORT}, ...)
	 */
	public static BootstrapServer create() {
		return DEFAULT;
	}

	/**
	 * @param host the interface to listen on: an IP literal (IPv6 with or without brackets) or a hostname
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer host(String host) {
		Objects.requireNonNull(host, "host");
		String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
		if (h.isBlank()) {
			throw new IllegalArgumentException("host : '" + host + "' (expected: an IP address or hostname)");
		}
		return new BootstrapServer(h, port, maxBodyBytes, idleTimeout, dpRankEntryLifetime, authToken);
	}

	/**
	 * @param port the port to listen on; 0 picks a free one (read it back from
	 *        {@link DisposableBootstrapServer#address()})
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer port(int port) {
		if (port < 0 || port > 65535) {
			throw new IllegalArgumentException("port : " + port + " (expected: 0..65535)");
		}
		return new BootstrapServer(host, port, maxBodyBytes, idleTimeout, dpRankEntryLifetime, authToken);
	}

	/**
	 * @param maxBodyBytes the largest request body accepted; larger ones are answered 413
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer maxBodyBytes(int maxBodyBytes) {
		if (maxBodyBytes < 1) {
			throw new IllegalArgumentException("maxBodyBytes : " + maxBodyBytes + " (expected: > 0)");
		}
		return new BootstrapServer(host, port, maxBodyBytes, idleTimeout, dpRankEntryLifetime, authToken);
	}

	/**
	 * @param idleTimeout how long a connection may stay idle between requests before it is closed
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer idleTimeout(Duration idleTimeout) {
		Objects.requireNonNull(idleTimeout, "idleTimeout");
		if (idleTimeout.isNegative() || idleTimeout.isZero()) {
			throw new IllegalArgumentException("idleTimeout : " + idleTimeout + " (expected: > 0)");
		}
		return new BootstrapServer(host, port, maxBodyBytes, idleTimeout, dpRankEntryLifetime, authToken);
	}

	/**
	 * @param dpRankEntryLifetime how long a {@code POST /register_dp_rank} entry is answered by
	 *        {@code POST /query_dp_ranks}
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer dpRankEntryLifetime(Duration dpRankEntryLifetime) {
		Objects.requireNonNull(dpRankEntryLifetime, "dpRankEntryLifetime");
		if (dpRankEntryLifetime.isNegative() || dpRankEntryLifetime.isZero()) {
			throw new IllegalArgumentException("dpRankEntryLifetime : " + dpRankEntryLifetime + " (expected: > 0)");
		}
		return new BootstrapServer(host, port, maxBodyBytes, idleTimeout, dpRankEntryLifetime, authToken);
	}

	/**
	 * Requires a bearer token on mutating requests ({@code PUT /route}, {@code POST /register_dp_rank}): without
	 * {@code Authorization: Bearer <token>} they are answered 401. Reads ({@code GET /route},
	 * {@code POST /query_dp_ranks}, {@code GET /health}) stay open, as SGLang's proposal has it.
	 *
	 * @param authToken the token, or {@code null} for no authentication (the default, as SGLang)
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer authToken(String authToken) {
		if (authToken != null && (authToken.isBlank() || !authToken.strip().equals(authToken))) {
			throw new IllegalArgumentException("authToken : blank or padded with whitespace (expected: a token)");
		}
		return new BootstrapServer(host, port, maxBodyBytes, idleTimeout, dpRankEntryLifetime, authToken);
	}

	/** @return the configured host, without brackets */
	public String host() {
		return host;
	}

	/** @return the configured port (0 = any free port) */
	public int port() {
		return port;
	}

	/** @return the largest accepted request body in bytes */
	public int maxBodyBytes() {
		return maxBodyBytes;
	}

	/** @return how long an idle connection is kept */
	public Duration idleTimeout() {
		return idleTimeout;
	}

	/** @return how long a room → DP rank entry is answered */
	public Duration dpRankEntryLifetime() {
		return dpRankEntryLifetime;
	}

	/** @return whether mutating requests need a bearer token */
	public boolean requiresAuthToken() {
		return authToken != null;
	}

	/**
	 * Binds a new server with empty tables. Lazy: nothing happens before subscription, and each subscription binds
	 * another server. Errors with Reactor Netty's {@code ChannelBindException} when the address cannot be bound.
	 *
	 * @return emits the running server
	 */
	public Mono<DisposableBootstrapServer> bind() {
		return Mono.defer(() -> {
			RouteTable routes = new RouteTable();
			RoomDpRankTable rooms = new RoomDpRankTable(dpRankEntryLifetime, System::nanoTime);
			BootstrapHttpHandler handler = new BootstrapHttpHandler(routes, rooms, maxBodyBytes, authToken);
			// Tracks this server's connections so that disposing it closes them too, not only the listening socket.
			ChannelGroup connections = new DefaultChannelGroup("kvferry-bootstrap", GlobalEventExecutor.INSTANCE);
			return HttpServer.create()
					.host(host)
					.port(port)
					.channelGroup(connections)
					.idleTimeout(idleTimeout)
					.requestTimeout(REQUEST_TIMEOUT)
					.handle(handler)
					.bind()
					.map(server -> {
						Disposable sweeper = Schedulers.parallel().schedulePeriodically(rooms::sweep,
								dpRankEntryLifetime.toMillis(), dpRankEntryLifetime.toMillis(),
								TimeUnit.MILLISECONDS);
						InetSocketAddress bound = (InetSocketAddress) server.address();
						HostPort address = new HostPort(bound.getAddress().getHostAddress(), bound.getPort());
						return (DisposableBootstrapServer) new DefaultDisposableBootstrapServer(server, connections,
								routes, address, sweeper);
					});
		});
	}

	/**
	 * Binds and waits up to {@link #DEFAULT_BIND_TIMEOUT}. Blocking: for {@code main} and tests, never an event loop.
	 *
	 * @return the running server
	 */
	public DisposableBootstrapServer bindNow() {
		return bindNow(DEFAULT_BIND_TIMEOUT);
	}

	/**
	 * Binds and waits. Blocking: for {@code main} and tests, never an event loop.
	 *
	 * @param timeout how long to wait, positive
	 * @return the running server
	 * @throws IllegalStateException when binding did not finish in time
	 */
	public DisposableBootstrapServer bindNow(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		if (timeout.isNegative() || timeout.isZero()) {
			throw new IllegalArgumentException("timeout : " + timeout + " (expected: > 0)");
		}
		try {
			return Objects.requireNonNull(bind().timeout(timeout).block(), "bound server");
		}
		catch (RuntimeException e) {
			if (e.getCause() instanceof TimeoutException) {
				throw new IllegalStateException("bootstrap server on " + new HostPort(host, port)
						+ " could not be bound within " + timeout.toMillis() + " ms", e);
			}
			throw e;
		}
	}

	@Override
	public String toString() {
		return "BootstrapServer{" + new HostPort(host, port) + ", maxBodyBytes=" + maxBodyBytes + ", idleTimeout="
				+ idleTimeout + ", dpRankEntryLifetime=" + dpRankEntryLifetime + ", authToken="
				+ (authToken == null ? "none" : "set") + "}";
	}
}
