package io.kvferry.bootstrap.server;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;

import io.kvferry.HostPort;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import reactor.netty.http.HttpResources;

/**
 * The standalone bootstrap server: {@code java -jar kvferry-bootstrap-server.jar --host H --port P}.
 * <p>
 * Logs one INFO line with the bound address when ready, then serves until the JVM is asked to stop; on SIGTERM (or
 * Ctrl-C) a shutdown hook closes the server and its event loops before the JVM exits. Exits with status 2 and a message
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

	@Option(names = "--auth-token", paramLabel = "TOKEN", defaultValue = "${env:" + AUTH_TOKEN_ENV + "}",
			description = "Bearer token required on PUT /route and POST /register_dp_rank (default: $" + AUTH_TOKEN_ENV
					+ ", else none). Prefer the environment variable: options show in process lists.")
	private String authToken;

	@Option(names = { "-h", "--help" }, usageHelp = true, description = "Show this help and exit.")
	private boolean help;

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

	@Override
	public Integer call() {
		BootstrapServer config = configure();
		DisposableBootstrapServer server;
		try {
			server = config.bindNow();
		}
		catch (RuntimeException e) {
			PrintWriter err = spec.commandLine().getErr();
			err.println("kvferry-bootstrap-server: cannot listen on " + new HostPort(config.host(),
					config.port()) + ": " + describe(e));
			err.flush();
			return EXIT_USAGE;
		}
		Runtime.getRuntime().addShutdownHook(new Thread(() -> shutdown(server), "kvferry-bootstrap-shutdown"));
		Log.LOG.info("kvferry bootstrap server listening on {}{}", server.address(),
				config.requiresAuthToken() ? " (bearer token required for writes)" : "");
		// Serve until the shutdown hook (or anything else) closes the server.
		server.onDispose().block();
		return 0;
	}

	private BootstrapServer configure() {
		try {
			return BootstrapServer.create()
					.host(host)
					.port(port)
					.maxBodyBytes(maxBodyBytes)
					.dpRankEntryLifetime(Duration.ofSeconds(dpRankEntryLifetimeSeconds))
					.authToken(authToken);
		}
		catch (IllegalArgumentException e) {
			throw new ParameterException(spec.commandLine(), "Invalid option value: " + e.getMessage(), e);
		}
	}

	private static void shutdown(DisposableBootstrapServer server) {
		Log.LOG.info("Stopping kvferry bootstrap server on {}", server.address());
		try {
			server.disposeNow(SHUTDOWN_TIMEOUT);
			HttpResources.disposeLoopsAndConnectionsLater(Duration.ZERO, SHUTDOWN_TIMEOUT).block(SHUTDOWN_TIMEOUT);
			Log.LOG.info("kvferry bootstrap server stopped");
		}
		catch (RuntimeException e) {
			Log.LOG.warn("kvferry bootstrap server did not stop cleanly", e);
		}
	}

	private static String describe(Throwable e) {
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
