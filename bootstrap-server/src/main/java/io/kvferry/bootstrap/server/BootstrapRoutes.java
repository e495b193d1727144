package io.kvferry.bootstrap.server;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.server.internal.BootstrapHttpHandler;
import io.kvferry.bootstrap.server.internal.DefaultDisposableBootstrapRoutes;
import io.kvferry.bootstrap.server.internal.EncoderUrls;
import io.kvferry.bootstrap.server.internal.EtcdStoreSupport;
import io.kvferry.bootstrap.server.internal.HttpLoops;
import io.kvferry.bootstrap.server.internal.RoomDpRankTable;
import io.kvferry.bootstrap.server.internal.RouteStore;
import io.kvferry.bootstrap.server.internal.RouteTable;
import io.kvferry.bootstrap.server.internal.ServerMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;

/**
 * The bootstrap server's SGLang routes, for an HTTP server of the caller's: {@code PUT /route}, {@code GET /route}
 * (SGLang's older and today's parameters, {@code -1} asking for the instance's sizes), {@code POST /register_dp_rank}
 * and {@code POST /query_dp_ranks}, as today's SGLang serves its bootstrap protocol on the engine's API port. They
 * answer byte for byte what {@link BootstrapServer} answers on the same paths: the standalone server mounts these
 * same routes and adds {@code GET /health}, {@code GET /metrics} and its 404 for other paths.
 * <pre>{@code
 * DisposableBootstrapRoutes bootstrap = BootstrapRoutes.create()
 *         .maxBodyBytes(64 * 1024)                 // 413 beyond
 *         .start();                                // the tables, empty
 * DisposableServer api = HttpServer.create()
 *         .port(30000)
 *         .route(routes -> {
 *             routes.get("/health", (req, res) -> res.sendString(Mono.just("OK")));
 *             bootstrap.accept(routes);            // SGLang's bootstrap paths, beside the engine's own
 *         })
 *         .bindNow();
 * ...
 * api.disposeNow();
 * bootstrap.dispose();                             // its tables and their sweep, after the server
 * }</pre>
 * Configured immutably: every setter returns a new {@code BootstrapRoutes} and leaves this one unchanged; each
 * {@link #start()} builds tables of its own. What belongs to the connection rather than the routes stays the
 * server's: its event loops, TLS, idle and request timeouts, connection cap, and the request line and header limits
 * (Reactor Netty's defaults, 4096 and 8192 bytes, are the standalone server's too).
 * <p>
 * Thread-safe. The routes never block the server's event loops: bodies are bounded and parsed in memory, the tables
 * are lock-free.
 *
 * @since 0.1
 */
public final class BootstrapRoutes {

	private static final BootstrapRoutes DEFAULT = new BootstrapRoutes(new RoutesSettings());

	private final RoutesSettings settings;

	private BootstrapRoutes(RoutesSettings settings) {
		this.settings = settings;
	}

	/**
	 * @return routes configured with the defaults: {@link BootstrapServer#DEFAULT_MAX_BODY_BYTES},
	 *         {@link BootstrapServer#DEFAULT_DP_RANK_ENTRY_LIFETIME}, {@link BootstrapServer#DEFAULT_MAX_DP_RANK_ENTRIES},
	 *         no token, no metrics, tables in memory
	 */
	public static BootstrapRoutes create() {
		return DEFAULT;
	}

	/**
	 * @param maxBodyBytes the largest request body accepted; larger ones are answered 413
	 * @return a new {@link BootstrapRoutes}
	 */
	public BootstrapRoutes maxBodyBytes(int maxBodyBytes) {
		if (maxBodyBytes < 1) {
			throw new IllegalArgumentException("maxBodyBytes : " + maxBodyBytes + " (expected: > 0)");
		}
		return with(s -> s.maxBodyBytes = maxBodyBytes);
	}

	/**
	 * @param dpRankEntryLifetime how long a {@code POST /register_dp_rank} entry is answered by
	 *        {@code POST /query_dp_ranks}
	 * @return a new {@link BootstrapRoutes}
	 */
	public BootstrapRoutes dpRankEntryLifetime(Duration dpRankEntryLifetime) {
		Objects.requireNonNull(dpRankEntryLifetime, "dpRankEntryLifetime");
		if (dpRankEntryLifetime.isNegative() || dpRankEntryLifetime.isZero()) {
			throw new IllegalArgumentException("dpRankEntryLifetime : " + dpRankEntryLifetime + " (expected: > 0)");
		}
		return with(s -> s.dpRankEntryLifetime = dpRankEntryLifetime);
	}

	/**
	 * Caps the room → DP rank table, as {@link BootstrapServer#maxDpRankEntries} does.
	 *
	 * @param maxDpRankEntries most rooms held at once, at least 1
	 * @return a new {@link BootstrapRoutes}
	 */
	public BootstrapRoutes maxDpRankEntries(int maxDpRankEntries) {
		if (maxDpRankEntries < 1) {
			throw new IllegalArgumentException("maxDpRankEntries : " + maxDpRankEntries + " (expected: >= 1)");
		}
		return with(s -> s.maxDpRankEntries = maxDpRankEntries);
	}

	/**
	 * Requires {@code Authorization: Bearer <token>} on {@code PUT /route} and {@code POST /register_dp_rank}, as
	 * {@link BootstrapServer#authToken} does (401 without it); reads stay open.
	 *
	 * @param authToken the token, or {@code null} for no authentication (the default, as SGLang)
	 * @return a new {@link BootstrapRoutes}
	 */
	public BootstrapRoutes authToken(@Nullable String authToken) {
		if (authToken != null && (authToken.isBlank() || !authToken.strip().equals(authToken))) {
			throw new IllegalArgumentException("authToken : blank or padded with whitespace (expected: a token)");
		}
		return with(s -> s.authToken = authToken);
	}

	/**
	 * Records the routes' requests, registrations and look-ups, and gauges of registered ranks, into
	 * {@code registry} (names in the {@code kvferry.bootstrap} namespace, as {@link BootstrapServer#metrics}). The
	 * routes serve no {@code /metrics}: the server they are mounted on publishes its registry its own way.
	 *
	 * @param registry where to record
	 * @return a new {@link BootstrapRoutes}
	 */
	public BootstrapRoutes metrics(MeterRegistry registry) {
		Objects.requireNonNull(registry, "registry");
		return with(s -> s.meterRegistry = registry);
	}

	/**
	 * Keeps registrations in etcd instead of this process's memory, as {@link BootstrapServer#etcdRegistry} does.
	 *
	 * @param endpoints {@code etcd://host:port[,host:port...]}
	 * @param instance the address decode ranks name this prefill instance by
	 * @return a new {@link BootstrapRoutes}
	 * @throws IllegalArgumentException naming the part of {@code endpoints} that is not a {@code host:port}
	 * @throws IllegalStateException when {@code kvferry-registry-etcd} is not on the class path
	 */
	public BootstrapRoutes etcdRegistry(String endpoints, HostPort instance) {
		Objects.requireNonNull(endpoints, "endpoints");
		Objects.requireNonNull(instance, "instance");
		List<HostPort> parsed = EtcdStoreSupport.parse(endpoints);
		return with(s -> {
			s.etcdEndpoints = parsed;
			s.instance = instance;
		});
	}

	/**
	 * With {@link #etcdRegistry}: speaks TLS to etcd, as {@link BootstrapServer#etcdTls} does.
	 *
	 * @param caCertificate PEM file of the CA that signed etcd's certificate
	 * @param clientCertificate PEM file of the client certificate, or null for none
	 * @param clientKey PEM file of its unencrypted key, null exactly when {@code clientCertificate} is
	 * @return a new {@link BootstrapRoutes}
	 * @throws IllegalArgumentException naming the file that is missing, unreadable, malformed or expired, or a key
	 *         that is not the certificate's
	 */
	public BootstrapRoutes etcdTls(Path caCertificate, @Nullable Path clientCertificate, @Nullable Path clientKey) {
		Objects.requireNonNull(caCertificate, "caCertificate");
		EtcdStoreSupport.Access access = new EtcdStoreSupport.Access(caCertificate, clientCertificate, clientKey,
				settings.etcdAccess.user(), settings.etcdAccess.password());
		EtcdStoreSupport.check(access);
		return with(s -> s.etcdAccess = access);
	}

	/**
	 * With {@link #etcdRegistry}: authenticates to etcd as {@code user}, as {@link BootstrapServer#etcdCredentials}
	 * does.
	 *
	 * @param user the etcd user
	 * @param password its password; never logged nor shown by {@link #toString()}
	 * @return a new {@link BootstrapRoutes}
	 * @throws IllegalArgumentException when either is empty
	 */
	public BootstrapRoutes etcdCredentials(String user, String password) {
		Objects.requireNonNull(user, "user");
		Objects.requireNonNull(password, "password");
		EtcdStoreSupport.Access current = settings.etcdAccess;
		EtcdStoreSupport.Access access = new EtcdStoreSupport.Access(current.ca(), current.certificate(),
				current.key(), user, password);
		EtcdStoreSupport.check(new EtcdStoreSupport.Access(null, null, null, user, password));
		return with(s -> s.etcdAccess = access);
	}

	/** @return the largest accepted request body in bytes */
	public int maxBodyBytes() {
		return settings.maxBodyBytes;
	}

	/** @return how long a room → DP rank entry is answered */
	public Duration dpRankEntryLifetime() {
		return settings.dpRankEntryLifetime;
	}

	/** @return most rooms the room → DP rank table holds at once */
	public int maxDpRankEntries() {
		return settings.maxDpRankEntries;
	}

	/** @return whether mutating requests need a bearer token */
	public boolean requiresAuthToken() {
		return settings.authToken != null;
	}

	/** @return whether the routes record metrics */
	public boolean hasMetrics() {
		return settings.meterRegistry != null;
	}

	/** @return the etcd endpoints registrations are kept in, or an empty list when they are kept in memory */
	public List<HostPort> etcdEndpoints() {
		return settings.etcdEndpoints == null ? List.of() : settings.etcdEndpoints;
	}

	/** @return whether etcd is spoken to over TLS ({@link #etcdTls}) */
	public boolean isEtcdSecure() {
		return settings.etcdAccess.ca() != null;
	}

	/** @return the etcd user ({@link #etcdCredentials}), or null */
	public @Nullable String etcdUser() {
		return settings.etcdAccess.user();
	}

	/**
	 * Builds the routes' state: empty tables (or a client of etcd), metrics, and the periodic sweep of expired room
	 * entries. Does not block (an etcd client connects on its first request).
	 *
	 * @return the routes, ready to mount on any number of servers; dispose them when those servers have stopped
	 * @throws IllegalStateException when {@link #etcdTls} or {@link #etcdCredentials} is set without
	 *         {@link #etcdRegistry}
	 */
	public DisposableBootstrapRoutes start() {
		return startDefault();
	}

	/** @return {@link #start()}'s routes, with what the standalone server mounts behind them */
	DefaultDisposableBootstrapRoutes startDefault() {
		if (settings.etcdEndpoints == null && settings.etcdAccess.isSet()) {
			throw new IllegalStateException("etcdTls / etcdCredentials without etcdRegistry (expected: "
					+ "etcdRegistry(endpoints, instance) too)");
		}
		RouteStore routes = settings.etcdEndpoints == null || settings.instance == null ? new RouteTable()
				: EtcdStoreSupport.open(settings.etcdEndpoints, settings.instance, settings.etcdAccess);
		RoomDpRankTable rooms = new RoomDpRankTable(settings.dpRankEntryLifetime, settings.maxDpRankEntries,
				System::nanoTime);
		ServerMetrics metrics = settings.meterRegistry == null ? ServerMetrics.none()
				: ServerMetrics.of(settings.meterRegistry);
		EncoderUrls encoders = new EncoderUrls(HttpClient.create().runOn(HttpLoops.shared()), EncoderUrls.PROBE_TIMEOUT,
				EncoderUrls.EVICTED_TTL, System::nanoTime);
		BootstrapHttpHandler handler = new BootstrapHttpHandler(routes, rooms, settings.maxBodyBytes,
				settings.authToken, metrics, encoders);
		long sweepMillis = settings.dpRankEntryLifetime.toMillis();
		Disposable sweeper = Schedulers.parallel().schedulePeriodically(rooms::sweep, sweepMillis, sweepMillis,
				TimeUnit.MILLISECONDS);
		Disposable gauges = metrics.registerGauges(routes, rooms);
		Disposable encoderChecks = encoders.checkEvery(EncoderUrls.CHECK_INTERVAL);
		return new DefaultDisposableBootstrapRoutes(handler, routes, metrics,
				Disposables.composite(sweeper, gauges, encoderChecks, routes));
	}

	private BootstrapRoutes with(Consumer<RoutesSettings> change) {
		RoutesSettings copy = settings.copy();
		change.accept(copy);
		return new BootstrapRoutes(copy);
	}

	@Override
	public String toString() {
		return "BootstrapRoutes{maxBodyBytes=" + settings.maxBodyBytes + ", dpRankEntryLifetime="
				+ settings.dpRankEntryLifetime + ", maxDpRankEntries=" + settings.maxDpRankEntries + ", authToken="
				+ (settings.authToken == null ? "none" : "set") + ", metrics=" + (settings.meterRegistry == null
						? "none" : settings.meterRegistry.getClass().getSimpleName())
				+ (settings.etcdEndpoints == null ? "" : ", etcd=" + settings.etcdEndpoints + " instance="
						+ settings.instance) + (settings.etcdAccess.isSet() ? " " + settings.etcdAccess : "") + "}";
	}
}
