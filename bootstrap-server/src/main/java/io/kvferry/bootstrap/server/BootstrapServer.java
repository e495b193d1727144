package io.kvferry.bootstrap.server;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

import io.kvferry.HostPort;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.handler.ssl.SslContext;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

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
 * {@code GET /route}, in SGLang's older protocol ({@code engine_rank}, {@code target_dp_group}, {@code target_pp_rank}) or
 * today's SGLang protocol ({@code prefill_dp_rank}, {@code prefill_cp_rank}, {@code target_tp_rank},
 * {@code target_pp_rank}); {@code POST /register_dp_rank} and {@code POST /query_dp_ranks} keep the room → DP rank
 * table; {@code GET /health} answers {@code OK}. Every bound server has its own tables.
 * <p>
 * Everything a client sends is bounded: the body ({@link #maxBodyBytes}), the JSON inside it (nesting depth, number,
 * string and name lengths, token count), the request line (4096 bytes, else 414) and headers (8192 bytes, else 431),
 * the time a connection may stay idle ({@link #idleTimeout}) and the time a whole request may take to arrive
 * ({@link #requestTimeout}). Optional hardening: TLS ({@link #secure}), a bearer token for writes
 * ({@link #authToken}) and Micrometer metrics with a Prometheus {@code GET /metrics} ({@link #metrics}):
 * <pre>{@code
 * PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
 * DisposableBootstrapServer server = BootstrapServer.create()
 *         .secure(SslContextBuilder.forServer(new File("cert.pem"), new File("key.pem")).build())
 *         .authToken(System.getenv("SGLANG_DISAGGREGATION_BOOTSTRAP_AUTH_TOKEN"))
 *         .metrics(registry)
 *         .bindNow();
 * }</pre>
 * <p>
 * Thread-safe. Each bound server runs on event loops of its own ({@link #ioThreads}, one by default), never on Reactor
 * Netty's shared ones: HTTP clients and any other code in the same JVM run there, and whatever stalls them must not
 * silence the registry every rank depends on. The server never blocks its loops; {@link #bindNow()} blocks the caller
 * and is meant for {@code main} and tests.
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

	/** Default time a client may take to send a whole request, from its first byte to its last. */
	public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(30);

	/** Longest TLS handshake allowed; shorter when the request timeout is. */
	public static final Duration MAX_TLS_HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);

	/** Default time a room → DP rank entry is answered (SGLang's cleanup interval). */
	public static final Duration DEFAULT_DP_RANK_ENTRY_LIFETIME = Duration.ofSeconds(120);

	/**
	 * Default cap on room → DP rank entries held at once: about 10 MB of heap, and room for 100,000 rooms registered
	 * within one {@link #DEFAULT_DP_RANK_ENTRY_LIFETIME}, some 800 a second.
	 */
	public static final int DEFAULT_MAX_DP_RANK_ENTRIES = 100_000;

	/** Default cap on open connections: far above what a cluster's ranks need, well below a process's descriptors. */
	public static final int DEFAULT_MAX_CONNECTIONS = 10_000;

	/**
	 * Default budget of refused connections kept open to deliver their 503: a few dozen sockets for a couple of
	 * seconds, enough to tell clients why during an ordinary overload.
	 */
	public static final int DEFAULT_MAX_LINGERING_REFUSALS = 64;

	/** Default number of event loop threads of a bound server. */
	public static final int DEFAULT_IO_THREADS = 1;

	/** How long {@link #bindNow()} waits for the socket to be bound. */
	public static final Duration DEFAULT_BIND_TIMEOUT = Duration.ofSeconds(45);

	private static final BootstrapServer DEFAULT = new BootstrapServer(new ServerSettings());

	private final ServerSettings settings;

	private BootstrapServer(ServerSettings settings) {
		this.settings = settings;
	}

	/**
	 * @return a server configured with the defaults ({@link #DEFAULT_HOST}, {@link #DEFAULT_PORT}, ...): plain HTTP, no
	 *         token, no metrics
	 */
	public static BootstrapServer create() {
		return DEFAULT;
	}

	/**
	 * @param host the interface to listen on: an IP literal (IPv6 with or without brackets) or a hostname
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer host(String host) {
		return with(s -> s.host(host));
	}

	/**
	 * @param port the port to listen on; 0 picks a free one (read it back from
	 *        {@link DisposableBootstrapServer#address()})
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer port(int port) {
		return with(s -> s.port(port));
	}

	/**
	 * @param maxBodyBytes the largest request body accepted; larger ones are answered 413
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer maxBodyBytes(int maxBodyBytes) {
		return withRoutes(routes -> routes.maxBodyBytes(maxBodyBytes));
	}

	/**
	 * @param idleTimeout how long a connection may go without receiving a byte while it waits for a request (a fresh
	 *        connection included) before it is closed
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer idleTimeout(Duration idleTimeout) {
		return with(s -> s.idleTimeout(idleTimeout));
	}

	/**
	 * @param requestTimeout how long a client may take to send a whole request, headers and body, from its first byte
	 *        to its last; a slower one is answered 408 and the connection closed, so a client trickling bytes cannot
	 *        hold a connection that the idle timeout would keep open. Also bounds the TLS handshake (at most
	 *        {@link #MAX_TLS_HANDSHAKE_TIMEOUT}).
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer requestTimeout(Duration requestTimeout) {
		return with(s -> s.requestTimeout(requestTimeout));
	}

	/**
	 * @param dpRankEntryLifetime how long a {@code POST /register_dp_rank} entry is answered by
	 *        {@code POST /query_dp_ranks}
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer dpRankEntryLifetime(Duration dpRankEntryLifetime) {
		return withRoutes(routes -> routes.dpRankEntryLifetime(dpRankEntryLifetime));
	}

	/**
	 * Caps the room → DP rank table, which {@code POST /register_dp_rank} fills and which needs no token unless
	 * {@link #authToken} is set: when {@code maxDpRankEntries} rooms are held, a new room is answered {@code 503} with
	 * a message naming the cap, while held rooms keep being answered and rewriting a held room's entry is never
	 * refused. Entries leave the table when their lifetime ({@link #dpRankEntryLifetime}) ends.
	 *
	 * @param maxDpRankEntries most rooms held at once, at least 1 (default {@value #DEFAULT_MAX_DP_RANK_ENTRIES})
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer maxDpRankEntries(int maxDpRankEntries) {
		return withRoutes(routes -> routes.maxDpRankEntries(maxDpRankEntries));
	}

	/**
	 * Requires a bearer token on mutating requests ({@code PUT /route}, {@code POST /register_dp_rank}): without
	 * {@code Authorization: Bearer <token>} they are answered 401. Reads ({@code GET /route},
	 * {@code POST /query_dp_ranks}, {@code GET /health}, {@code GET /metrics}) stay open, as SGLang's proposal has it.
	 * Stock SGLang ranks send no {@code Authorization} header (the token is only proposed upstream): with a token set,
	 * their registrations get 401, so set one only for clients that send it (kvferry's, or SGLang behind a proxy that
	 * adds it). Over plain HTTP the token crosses the network in clear: combine it with {@link #secure}.
	 *
	 * @param authToken the token, or {@code null} for no authentication (the default, as SGLang)
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer authToken(@Nullable String authToken) {
		return withRoutes(routes -> routes.authToken(authToken));
	}

	/**
	 * Serves HTTPS instead of plain HTTP (HTTP/1.1 over TLS; do not offer {@code h2} through ALPN). Clients then use
	 * {@code https://host:port} ({@link DisposableBootstrapServer#baseUrl()}); SGLang's own Python clients speak plain
	 * HTTP only, so a secured server serves kvferry clients (or SGLang behind a TLS-terminating proxy).
	 * <pre>{@code
	 * SslContext tls = SslContextBuilder.forServer(new File("cert.pem"), new File("key.pem")).build();
	 * BootstrapServer.create().secure(tls).bindNow();
	 * }</pre>
	 *
	 * @param sslContext a server context ({@code SslContextBuilder.forServer(..)}); add a trust manager and
	 *        {@code clientAuth(ClientAuth.REQUIRE)} to it for mutual TLS
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer secure(SslContext sslContext) {
		return with(s -> s.sslContext(sslContext));
	}

	/**
	 * Records metrics into {@code registry}: requests by route, method and status, registrations, look-ups and gauges
	 * of registered ranks (names in the {@code kvferry.bootstrap} namespace). When the registry is a
	 * {@code PrometheusMeterRegistry} (or a composite holding one), {@code GET /metrics} answers its scrape, every
	 * meter of the registry included; otherwise {@code /metrics} is 404 and the caller publishes the registry its own
	 * way.
	 * Give each live server its own registry: two live servers would share their gauges.
	 *
	 * @param registry where to record
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer metrics(MeterRegistry registry) {
		return withRoutes(routes -> routes.metrics(registry));
	}

	/**
	 * Keeps registrations in etcd instead of this process's memory, so that several bootstrap servers of one prefill
	 * instance (behind a load balancer) answer the same, a restarted server loses nothing, and ranks using
	 * {@code EtcdBootstrapClient} directly see the same instance. Keys follow the etcd registry's layout
	 * ({@code kvferry/instances/{instance}/info} and {@code .../ranks/{dp}/{cp}/{tp}/{pp}}); ranks registered over
	 * HTTP carry no lease and stay until overwritten, as in SGLang. Needs {@code io.kvferry:kvferry-registry-etcd} on
	 * the class path (the standalone jar has it). When etcd cannot be reached, requests are answered {@code 503}.
	 *
	 * @param endpoints {@code etcd://host:port[,host:port...]}
	 * @param instance the address decode ranks name this prefill instance by: this server's, or that of the load
	 *        balancer in front of several servers
	 * @return a new {@link BootstrapServer}
	 * @throws IllegalArgumentException naming the part of {@code endpoints} that is not a {@code host:port}
	 * @throws IllegalStateException when {@code kvferry-registry-etcd} is not on the class path
	 */
	public BootstrapServer etcdRegistry(String endpoints, HostPort instance) {
		return withRoutes(routes -> routes.etcdRegistry(endpoints, instance));
	}

	/**
	 * With {@link #etcdRegistry}: speaks TLS to etcd ({@code https://}), trusting the etcd server certificates that
	 * {@code caCertificate} signed, and for etcd run with {@code --client-cert-auth} presents a client certificate.
	 * The files are read now (and again at each bind), so a missing, unreadable or malformed one fails here, named.
	 *
	 * @param caCertificate PEM file of the CA that signed etcd's certificate
	 * @param clientCertificate PEM file of the client certificate, or null for none
	 * @param clientKey PEM file of its unencrypted key (PKCS#8, or OpenSSL's RSA / EC form), null exactly when
	 *        {@code clientCertificate} is
	 * @return a new {@link BootstrapServer}
	 * @throws IllegalArgumentException naming the file that is missing, unreadable, malformed or expired, or a key
	 *         that is not the certificate's
	 */
	public BootstrapServer etcdTls(Path caCertificate, @Nullable Path clientCertificate, @Nullable Path clientKey) {
		return withRoutes(routes -> routes.etcdTls(caCertificate, clientCertificate, clientKey));
	}

	/**
	 * With {@link #etcdRegistry}: authenticates to etcd as {@code user}, whose role must be allowed to read and write
	 * the registry's keys ({@code kvferry/}). Over plain http the password crosses the network in clear: combine with
	 * {@link #etcdTls}.
	 *
	 * @param user the etcd user
	 * @param password its password; never logged nor shown by {@link #toString()}
	 * @return a new {@link BootstrapServer}
	 * @throws IllegalArgumentException when either is empty
	 */
	public BootstrapServer etcdCredentials(String user, String password) {
		return withRoutes(routes -> routes.etcdCredentials(user, password));
	}

	/** @return whether etcd is spoken to over TLS ({@link #etcdTls}) */
	public boolean isEtcdSecure() {
		return settings.routes.isEtcdSecure();
	}

	/** @return the etcd user ({@link #etcdCredentials}), or null */
	public @Nullable String etcdUser() {
		return settings.routes.etcdUser();
	}

	/** @return the etcd endpoints registrations are kept in, or an empty list when they are kept in memory */
	public List<HostPort> etcdEndpoints() {
		return settings.routes.etcdEndpoints();
	}

	/**
	 * @param maxConnections most connections open at once; one more is answered {@code 503} naming the cap and closed
	 *        (or closed at once, see {@link #maxLingeringRefusals}), while the open ones keep working (default
	 *        {@value #DEFAULT_MAX_CONNECTIONS})
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer maxConnections(int maxConnections) {
		return with(s -> s.maxConnections(maxConnections));
	}

	/**
	 * A connection refused over {@link #maxConnections} is answered {@code 503} and then kept open up to
	 * 2 s so that the answer arrives; those lingering sockets count against this
	 * budget instead of the cap. Beyond it a refused connection is closed at once without an answer, so a flood holds
	 * at most {@code maxConnections + maxLingeringRefusals} sockets.
	 *
	 * @param maxLingeringRefusals most refused connections kept open at once to deliver their answer, at least 0
	 *        (default {@value #DEFAULT_MAX_LINGERING_REFUSALS})
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer maxLingeringRefusals(int maxLingeringRefusals) {
		return with(s -> s.maxLingeringRefusals(maxLingeringRefusals));
	}

	/** @return event loop threads of each bound server */
	public int ioThreads() {
		return settings.ioThreads;
	}

	/**
	 * Sets how many event loop threads each bound server has. They are the server's own, created when it binds and
	 * shut down with it. One thread serves tens of thousands of look-ups per second; more only help on a host with
	 * cores to spare for the registry.
	 *
	 * @param ioThreads at least 1 (default {@value #DEFAULT_IO_THREADS})
	 * @return a new {@code BootstrapServer}
	 */
	public BootstrapServer ioThreads(int ioThreads) {
		return with(s -> s.ioThreads(ioThreads));
	}

	/** @return how many refused connections may linger to deliver their 503 */
	public int maxLingeringRefusals() {
		return settings.maxLingeringRefusals;
	}

	/** @return the most connections open at once */
	public int maxConnections() {
		return settings.maxConnections;
	}

	/** @return the configured host, without brackets */
	public String host() {
		return settings.host;
	}

	/** @return the configured port (0 = any free port) */
	public int port() {
		return settings.port;
	}

	/** @return the largest accepted request body in bytes */
	public int maxBodyBytes() {
		return settings.routes.maxBodyBytes();
	}

	/** @return how long an idle connection is kept */
	public Duration idleTimeout() {
		return settings.idleTimeout;
	}

	/** @return how long a client may take to send a whole request */
	public Duration requestTimeout() {
		return settings.requestTimeout;
	}

	/** @return how long a room → DP rank entry is answered */
	public Duration dpRankEntryLifetime() {
		return settings.routes.dpRankEntryLifetime();
	}

	/** @return most rooms the room → DP rank table holds at once */
	public int maxDpRankEntries() {
		return settings.routes.maxDpRankEntries();
	}

	/** @return whether mutating requests need a bearer token */
	public boolean requiresAuthToken() {
		return settings.routes.requiresAuthToken();
	}

	/** @return whether the server speaks HTTPS */
	public boolean isSecure() {
		return settings.sslContext != null;
	}

	/** @return whether the server records metrics */
	public boolean hasMetrics() {
		return settings.routes.hasMetrics();
	}

	/**
	 * Binds a new server with empty tables. Lazy: nothing happens before subscription, and each subscription binds
	 * another server. Errors with Reactor Netty's {@code ChannelBindException} when the address cannot be bound.
	 *
	 * @return emits the running server
	 */
	public Mono<DisposableBootstrapServer> bind() {
		return Mono.defer(() -> ServerBinding.bind(settings));
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
		return ServerBinding.bindNow(settings, timeout);
	}

	/**
	 * @return the routes this server mounts: the settings of its {@code /route}, {@code /register_dp_rank} and
	 *         {@code /query_dp_ranks} ({@link #maxBodyBytes}, {@link #authToken}, {@link #metrics}, ...)
	 */
	public BootstrapRoutes routes() {
		return settings.routes;
	}

	/**
	 * Replaces every setting of the routes at once ({@link #maxBodyBytes}, {@link #dpRankEntryLifetime},
	 * {@link #maxDpRankEntries}, {@link #authToken}, {@link #metrics} and the etcd ones), so that the standalone server
	 * and routes mounted on another server can share one configuration.
	 *
	 * @param routes the routes' configuration; each bind starts them anew, with tables of its own
	 * @return a new {@link BootstrapServer}
	 */
	public BootstrapServer routes(BootstrapRoutes routes) {
		Objects.requireNonNull(routes, "routes");
		return with(s -> s.routes = routes);
	}

	private BootstrapServer withRoutes(UnaryOperator<BootstrapRoutes> change) {
		BootstrapRoutes routes = change.apply(settings.routes);
		return with(s -> s.routes = routes);
	}

	private BootstrapServer with(Consumer<ServerSettings> change) {
		ServerSettings copy = settings.copy();
		change.accept(copy);
		return new BootstrapServer(copy);
	}

	@Override
	public String toString() {
		return "BootstrapServer{" + (settings.sslContext != null ? "https://" : "http://")
				+ new HostPort(settings.host, settings.port) + ", idleTimeout=" + settings.idleTimeout
				+ ", requestTimeout=" + settings.requestTimeout + ", maxConnections=" + settings.maxConnections
				+ ", maxLingeringRefusals=" + settings.maxLingeringRefusals + ", ioThreads=" + settings.ioThreads
				+ ", routes=" + settings.routes + "}";
	}
}
