package io.kvferry.bootstrap.server;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.ssl.SslContext;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import reactor.core.publisher.Mono;
import reactor.netty.http.HttpResources;

/**
 * The standalone bootstrap server: {@code java -jar kvferry-bootstrap-server.jar --host H --port P}.
 * <p>
 * Serves plain HTTP unless {@code --tls-cert} and {@code --tls-key} (PEM files) are given, then HTTPS. Requires a
 * bearer token on writes when {@code --auth-token} or {@value #AUTH_TOKEN_ENV} is set, unless
 * {@code --no-require-auth-token} says otherwise: stock SGLang ranks send no {@code Authorization} header (the token is
 * only proposed upstream), so with a token required their registrations get 401. One line at start-up says which
 * applies. Records Micrometer metrics (the
 * server's, the JVM's and the process') and serves them to Prometheus on {@code GET /metrics} unless
 * {@code --no-metrics} is given.
 * <p>
 * Keeps registrations in memory, or in etcd with {@code --registry etcd://host:port[,...]} (and {@code --instance}
 * naming the prefill instance), so that several servers answer the same and a restart loses nothing. A secured etcd
 * takes {@code --etcd-ca} (TLS), {@code --etcd-cert} and {@code --etcd-key} (mutual TLS) and {@code --etcd-user} with
 * the password in {@code --etcd-password-file} or {@value #ETCD_PASSWORD_ENV}; there is no option that takes the
 * password itself, since options show in process lists.
 * <p>
 * Logs one INFO line with the bound URL when ready, then serves until SIGTERM (or Ctrl-C): then it drains, that is stops
 * listening, lets requests in flight finish for up to {@code --drain-timeout-seconds}, closes what is left, and exits
 * with status 0. Exits with status 2 and a message
 * on standard error for bad options or an address that cannot be bound.
 * <p>
 * Unless {@code -Dlogback.configurationFile} is given, logging uses the jar's {@value #LOGBACK_CONFIG} (console,
 * INFO); library users of {@link BootstrapServer} are not affected since nothing else points logback at it.
 *
 * @since 0.1
 */
@Command(name = "kvferry-bootstrap-server", sortOptions = false, usageHelpAutoWidth = true,
		description = "SGLang-compatible bootstrap server for prefill/decode disaggregation: prefill ranks register "
				+ "with PUT /route, decode ranks look them up with GET /route.")
public final class BootstrapServerMain implements Callable<Integer> {

	/** The logback configuration resource the standalone jar uses by default. */
	public static final String LOGBACK_CONFIG = "kvferry-bootstrap-server-logback.xml";

	/** The environment variable the token comes from when {@code --auth-token} is not given (SGLang's name). */
	public static final String AUTH_TOKEN_ENV = "SGLANG_DISAGGREGATION_BOOTSTRAP_AUTH_TOKEN";

	/** The environment variable the TLS key password comes from when {@code --tls-key-password} is not given. */
	public static final String TLS_KEY_PASSWORD_ENV = "KVFERRY_BOOTSTRAP_TLS_KEY_PASSWORD";

	/** The environment variable the etcd password comes from when {@code --etcd-password-file} is not given. */
	public static final String ETCD_PASSWORD_ENV = "KVFERRY_ETCD_PASSWORD";

	/** Exit status for bad options or a failed bind. */
	public static final int EXIT_USAGE = 2;

	private static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(10);

	@Spec
	private CommandSpec spec;

	@Option(names = "--host", paramLabel = "HOST", defaultValue = BootstrapServer.DEFAULT_HOST,
			description = "Interface to listen on (default: ${DEFAULT-VALUE}).")
	private String host;

	@Option(names = "--port", paramLabel = "PORT", defaultValue = "" + BootstrapServer.DEFAULT_PORT,
			description = "Port to listen on, 0 for any free port (default: ${DEFAULT-VALUE}).")
	private int port;

	@Option(names = "--max-body-bytes", paramLabel = "BYTES",
			defaultValue = "" + BootstrapServer.DEFAULT_MAX_BODY_BYTES,
			description = "Largest request body accepted; larger ones are answered 413 (default: ${DEFAULT-VALUE}).")
	private int maxBodyBytes;

	@Option(names = "--dp-rank-entry-lifetime-seconds", paramLabel = "SECONDS", defaultValue = "120",
			description = "How long a room's DP rank (POST /register_dp_rank) is answered (default: ${DEFAULT-VALUE}).")
	private long dpRankEntryLifetimeSeconds;

	@Option(names = "--max-dp-rank-entries", paramLabel = "N",
			defaultValue = "" + BootstrapServer.DEFAULT_MAX_DP_RANK_ENTRIES,
			description = "Most rooms held by POST /register_dp_rank at once; a new room beyond gets 503 naming the "
					+ "cap (default: ${DEFAULT-VALUE}).")
	private int maxDpRankEntries;

	@Option(names = "--idle-timeout-seconds", paramLabel = "SECONDS", defaultValue = "60",
			description = "Close a connection that sends nothing for this long while awaiting a request "
					+ "(default: ${DEFAULT-VALUE}).")
	private long idleTimeoutSeconds;

	@Option(names = "--request-timeout-seconds", paramLabel = "SECONDS", defaultValue = "30",
			description = "Answer 408 and close when a request (headers and body) takes longer than this to arrive "
					+ "(default: ${DEFAULT-VALUE}).")
	private long requestTimeoutSeconds;

	@Mixin
	private TlsOptions tls;

	@Option(names = "--metrics", negatable = true, defaultValue = "true", fallbackValue = "true",
			description = "Serve Prometheus metrics on GET /metrics; --no-metrics turns them off (default: on).")
	private boolean metrics;

	@Option(names = "--auth-token", paramLabel = "TOKEN", defaultValue = "${env:" + AUTH_TOKEN_ENV + "}",
			description = "Bearer token required on PUT /route and POST /register_dp_rank (default: $" + AUTH_TOKEN_ENV
					+ ", else none; see --require-auth-token). Prefer the environment variable: options show in "
					+ "process lists.")
	private @Nullable String authToken;

	@Option(names = "--require-auth-token", negatable = true,
			description = "Whether writes need the bearer token. Default: required when a token is set. Stock SGLang "
					+ "ranks send no token, so with one required their registrations get 401: "
					+ "--no-require-auth-token accepts them and ignores the token; --require-auth-token refuses to "
					+ "start without a token.")
	private @Nullable Boolean requireAuthToken;

	@Option(names = "--max-connections", paramLabel = "N",
			defaultValue = "" + BootstrapServer.DEFAULT_MAX_CONNECTIONS,
			description = "Most connections open at once; one more gets 503 and is closed (default: ${DEFAULT-VALUE}).")
	private int maxConnections;

	@Option(names = "--max-lingering-refusals", paramLabel = "N",
			defaultValue = "" + BootstrapServer.DEFAULT_MAX_LINGERING_REFUSALS,
			description = "Most refused connections kept open (2 s at most) to deliver their 503; beyond, a refused "
					+ "connection is closed at once without an answer (default: ${DEFAULT-VALUE}).")
	private int maxLingeringRefusals;

	@Option(names = "--registry", paramLabel = "URI",
			description = "Keep registrations in etcd, so that several servers of one prefill instance answer the "
					+ "same and a restart loses nothing: etcd://host:port[,host:port...] (default: in memory).")
	private @Nullable String registryUri;

	@Option(names = "--instance", paramLabel = "HOST:PORT",
			description = "With --registry: the address decode ranks name this prefill instance by (this server's, "
					+ "or the load balancer's in front of several); default: --host:--port.")
	private @Nullable String instance;

	@Mixin
	private EtcdAccessOptions etcd;

	@Option(names = "--io-threads", paramLabel = "N", defaultValue = "" + BootstrapServer.DEFAULT_IO_THREADS,
			description = "Event loop threads (default: ${DEFAULT-VALUE}). One serves tens of thousands of look-ups a "
					+ "second; more only contend for the CPUs with the engines on the same host.")
	private int ioThreads;

	@Option(names = "--drain-timeout-seconds", paramLabel = "SECONDS", defaultValue = "10",
			description = "On SIGTERM or SIGINT stop listening and let requests in flight finish for up to this long "
					+ "before closing their connections (default: ${DEFAULT-VALUE}).")
	private int drainTimeoutSeconds;

	@Option(names = { "-h", "--help" }, usageHelp = true, description = "Show this help and exit.")
	private boolean help;

	/** Where environment variables are read; tests give their own. */
	private Function<String, @Nullable String> environment = System::getenv;

	/** The registry and JVM meters behind GET /metrics; null with --no-metrics or before {@link #configure()}. */
	private @Nullable PrometheusMeterRegistry registry;
	private @Nullable JvmGcMetrics gcMetrics;

	private BootstrapServerMain() {
	}

	/**
	 * Runs the server until the JVM stops.
	 *
	 * @param args command-line arguments; {@code --help} lists them
	 */
	public static void main(String[] args) {
		if (System.getProperty("logback.configurationFile") == null) {
			// Set before the first logger is created; the lazily loaded Log holder guarantees that.
			System.setProperty("logback.configurationFile", LOGBACK_CONFIG);
		}
		System.exit(execute(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
	}

	/**
	 * Parses the arguments and runs the server; returns at once for {@code --help}, bad options or a failed bind.
	 *
	 * @param out where help goes
	 * @param err where errors go
	 * @param args command-line arguments
	 * @return the exit status: 0 after help or a clean stop, {@value #EXIT_USAGE} for bad options or a failed bind
	 */
	public static int execute(PrintWriter out, PrintWriter err, String... args) {
		CommandLine commandLine = new CommandLine(new BootstrapServerMain());
		commandLine.setOut(out);
		commandLine.setErr(err);
		return commandLine.execute(args);
	}

	/**
	 * Parses a command line into the server configuration it describes, without binding; for tests.
	 *
	 * @param args command-line arguments
	 * @return the configuration and the metrics to close after use
	 * @throws ParameterException for bad options
	 */
	static Configured configuration(String... args) {
		return configuration(Map.of(), args);
	}

	/**
	 * Parses a command line as {@link #configuration(String...)} does, with the given environment variables instead
	 * of the process's.
	 *
	 * @param environment environment variables
	 * @param args command-line arguments
	 * @return the configuration and the metrics to close after use
	 * @throws ParameterException for bad options
	 */
	static Configured configuration(Map<String, String> environment, String... args) {
		BootstrapServerMain main = new BootstrapServerMain();
		main.environment = environment::get;
		new CommandLine(main).parseArgs(args);
		return new Configured(main.configure(), main::closeMetrics);
	}

	/**
	 * A parsed command line.
	 *
	 * @param server the server it configures
	 * @param closeMetrics closes its metrics registry and JVM meters
	 */
	record Configured(BootstrapServer server, Runnable closeMetrics) {
	}

	@Override
	public Integer call() {
		BootstrapServer config = configure();
		DisposableBootstrapServer server;
		try {
			server = config.bindNow();
		}
		catch (RuntimeException e) {
			closeMetrics();
			PrintWriter err = spec.commandLine().getErr();
			err.println("kvferry-bootstrap-server: cannot listen on " + new HostPort(config.host(),
					config.port()) + ": " + describe(e));
			err.flush();
			return EXIT_USAGE;
		}
		Mono<String> stop = StopSignal.install();
		List<String> notes = new ArrayList<>();
		if (config.hasMetrics()) {
			notes.add("Prometheus metrics on GET /metrics");
		}
		if (!config.etcdEndpoints().isEmpty()) {
			notes.add("registrations in etcd " + config.etcdEndpoints() + (config.isEtcdSecure() ? " over TLS" : "")
					+ (etcd.hasClientCertificate() ? " with a client certificate" : "")
					+ (config.etcdUser() != null ? " as user " + config.etcdUser() : ""));
		}
		Log.LOG.info("kvferry bootstrap server listening on {}{}", server.baseUrl(),
				notes.isEmpty() ? "" : " (" + String.join("; ", notes) + ")");
		// Serve until a stop signal, or until anything else closes the server (both emit a value: never null).
		String signal = Objects.requireNonNull(Mono.firstWithSignal(stop, server.onDispose().thenReturn("")).block(),
				"signal");
		shutdown(server, signal);
		return 0;
	}

	private static HostPort parseInstance(String text) {
		try {
			return HostPort.parse(text);
		}
		catch (IllegalArgumentException e) {
			throw new IllegalArgumentException("--instance : " + text + " (expected: host:port): " + e.getMessage(), e);
		}
	}

	private BootstrapServer configure() {
		BootstrapServer config;
		try {
			config = BootstrapServer.create()
					.host(host)
					.port(port)
					.maxBodyBytes(maxBodyBytes)
					.dpRankEntryLifetime(Duration.ofSeconds(dpRankEntryLifetimeSeconds))
					.maxDpRankEntries(maxDpRankEntries)
					.idleTimeout(Duration.ofSeconds(idleTimeoutSeconds))
					.requestTimeout(Duration.ofSeconds(requestTimeoutSeconds))
					.authToken(writeToken())
					.maxConnections(maxConnections)
					.maxLingeringRefusals(maxLingeringRefusals);
			if (registryUri != null) {
				config = config.etcdRegistry(registryUri, instance != null ? parseInstance(instance)
						: new HostPort(host, port));
				config = etcd.apply(config, environment);
			}
			else if (instance != null) {
				throw new IllegalArgumentException("--instance : " + instance + " (expected: only with --registry)");
			}
			else {
				etcd.checkUnused();
			}
		}
		catch (IllegalArgumentException e) {
			throw new ParameterException(spec.commandLine(), "Invalid option value: " + e.getMessage(), e);
		}
		if (drainTimeoutSeconds < 0) {
			throw new ParameterException(spec.commandLine(), "Invalid option value: --drain-timeout-seconds : "
					+ drainTimeoutSeconds + " (expected: >= 0)");
		}
		if (ioThreads < 1) {
			throw new ParameterException(spec.commandLine(), "Invalid option value: --io-threads : " + ioThreads
					+ " (expected: >= 1)");
		}
		config = config.ioThreads(ioThreads);
		SslContext context = tls.context(spec.commandLine());
		if (context != null) {
			config = config.secure(context);
		}
		if (metrics) {
			registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
			new JvmMemoryMetrics().bindTo(registry);
			new JvmThreadMetrics().bindTo(registry);
			gcMetrics = new JvmGcMetrics();
			gcMetrics.bindTo(registry);
			new ProcessorMetrics().bindTo(registry);
			new UptimeMetrics().bindTo(registry);
			new FileDescriptorMetrics().bindTo(registry);
			config = config.metrics(registry);
		}
		return config;
	}

	/**
	 * Decides whether writes need the token and says so in one line: operators who set {@value #AUTH_TOKEN_ENV} for
	 * SGLang's proposed authentication should not find stock SGLang ranks refused without a word, nor believe writes
	 * protected when they are not.
	 *
	 * @return the token writes must carry, or null when they need none
	 */
	private @Nullable String writeToken() {
		boolean tokenSet = authToken != null && !authToken.isEmpty();
		if (Boolean.TRUE.equals(requireAuthToken) && !tokenSet) {
			throw new ParameterException(spec.commandLine(), "Invalid option value: --require-auth-token : no token "
					+ "(expected: --auth-token or $" + AUTH_TOKEN_ENV + ")");
		}
		boolean required = tokenSet && !Boolean.FALSE.equals(requireAuthToken);
		if (required) {
			Log.LOG.info("Writes (PUT /route, POST /register_dp_rank) require the bearer token; stock SGLang ranks "
					+ "send none and get 401 (--no-require-auth-token accepts them)");
		}
		else if (tokenSet) {
			Log.LOG.warn("Writes (PUT /route, POST /register_dp_rank) need no token (--no-require-auth-token): the "
					+ "token set is ignored, as stock SGLang ranks send none; anyone who reaches this port can "
					+ "register ranks");
		}
		else {
			Log.LOG.info("Writes (PUT /route, POST /register_dp_rank) need no token, as stock SGLang ranks send none; "
					+ "anyone who reaches this port can register ranks (--auth-token or ${} requires one)",
					AUTH_TOKEN_ENV);
		}
		return required ? authToken : null;
	}

	private void closeMetrics() {
		if (gcMetrics != null) {
			gcMetrics.close();
			gcMetrics = null;
		}
		if (registry != null) {
			registry.close();
			registry = null;
		}
	}

	private void shutdown(DisposableBootstrapServer server, String signal) {
		Duration drain = Duration.ofSeconds(drainTimeoutSeconds);
		long start = System.nanoTime();
		Log.LOG.info("{}: draining kvferry bootstrap server on {} (requests in flight may take up to {})",
				signal.isEmpty() ? "closed" : signal, server.baseUrl(), drain);
		try {
			try {
				server.disposeNow(drain.isZero() ? Duration.ofMillis(1) : drain);
			}
			catch (IllegalStateException e) {
				Log.LOG.warn("requests in flight did not finish within {}; closing their connections", drain);
				server.dispose();
				server.onDispose().block(SHUTDOWN_TIMEOUT);
			}
			HttpResources.disposeLoopsAndConnectionsLater(Duration.ZERO, SHUTDOWN_TIMEOUT).block(SHUTDOWN_TIMEOUT);
			Log.LOG.info("kvferry bootstrap server stopped after {} ms", (System.nanoTime() - start) / 1_000_000);
		}
		catch (RuntimeException e) {
			Log.LOG.warn("kvferry bootstrap server did not stop cleanly", e);
		}
		finally {
			closeMetrics();
		}
	}

	/** @return the message of {@code e} and of each cause that adds to it */
	static String describe(Throwable e) {
		StringBuilder message = new StringBuilder(String.valueOf(e.getMessage()));
		for (Throwable cause = e.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
			if (cause.getMessage() != null && !message.toString().contains(cause.getMessage())) {
				message.append(": ").append(cause.getMessage());
			}
		}
		return message.toString();
	}

	/** Holds the logger so that it is created only after {@link #main} chose the logback configuration. */
	private static final class Log {

		private static final Logger LOG = LoggerFactory.getLogger(BootstrapServerMain.class);
	}
}
