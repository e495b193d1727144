package io.kvferry.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.Callable;

import io.kvferry.HostPort;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The {@code kvferry} command line: {@code demo}, {@code bootstrap}, {@code prefill}, {@code decode} and {@code bench}.
 * Results go to stdout, progress and logs to stderr. Run it with {@code ./kvferry} at the repository root, which builds
 * it on first use.
 *
 * <p>Exit status: 0 success (every byte matched), 1 a room failed or a byte differed, 2 bad usage, 3 could not run.
 */
@Command(name = "kvferry", mixinStandardHelpOptions = true, versionProvider = KVFerryCli.Version.class,
		subcommands = { DemoCommand.class, BootstrapCommand.class, PrefillCommand.class, DecodeCommand.class,
				BenchCommand.class, SameHostBenchCommand.class, LayerwiseBench.class, FleetCommand.class,
				CommandLine.HelpCommand.class },
		description = {
				"Moves LLM KV cache from prefill to decode servers (SGLang's PD-disaggregation transfer, on the JVM).",
				"" },
		footer = { "", "Try `kvferry demo` first. `kvferry <command> --help` documents every option.",
				"Exit status: 0 success; 1 a room failed or a byte differed; 2 bad usage; 3 could not run." })
public final class KVFerryCli implements Callable<Integer> {

	/** Exit status when a command could not run at all (bind failure, unreachable bootstrap server, ...). */
	public static final int EXIT_ERROR = 3;

	private static final Logger log = LoggerFactory.getLogger(KVFerryCli.class);

	@Spec
	CommandSpec spec;

	/**
	 * Runs the command line and exits with its status.
	 *
	 * @param args the arguments
	 */
	public static void main(String[] args) {
		System.exit(commandLine().execute(args));
	}

	/**
	 * @return a fresh command line with kvferry's converters and error handling; output goes to the JVM's stdout and
	 *         stderr unless replaced with {@link CommandLine#setOut} / {@link CommandLine#setErr}
	 */
	public static CommandLine commandLine() {
		CommandLine cl = new CommandLine(new KVFerryCli());
		cl.registerConverter(Duration.class, new DurationConverter());
		cl.registerConverter(HostPort.class, new HostPortConverter());
		cl.setParameterExceptionHandler(KVFerryCli::usageError);
		cl.setExecutionExceptionHandler(KVFerryCli::runError);
		return cl;
	}

	/** Without a subcommand: the usage, and a usage error status. */
	@Override
	public Integer call() {
		spec.commandLine().usage(spec.commandLine().getErr());
		return spec.exitCodeOnInvalidInput();
	}

	private static int usageError(CommandLine.ParameterException e, String[] args) {
		CommandLine cl = e.getCommandLine();
		PrintWriter err = cl.getErr();
		err.println(cl.getColorScheme().errorText(cl.getCommandSpec().qualifiedName() + ": " + e.getMessage()));
		CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
		err.println("Try '" + cl.getCommandSpec().qualifiedName() + " --help' for more information.");
		err.flush();
		return cl.getCommandSpec().exitCodeOnInvalidInput();
	}

	private static int runError(Exception e, CommandLine cl, CommandLine.ParseResult parsed) {
		PrintWriter err = cl.getErr();
		Throwable cause = reactor.core.Exceptions.unwrap(e);
		// block() wraps checked exceptions; the message of the real cause is what a user can act on.
		while (cause.getCause() != null && cause.getMessage() != null
				&& cause.getMessage().startsWith(cause.getCause().getClass().getName())) {
			cause = cause.getCause();
		}
		err.println(cl.getColorScheme().errorText(cl.getCommandSpec().qualifiedName() + ": "
				+ (cause.getMessage() != null ? cause.getMessage() : cause.toString())));
		err.flush();
		log.info("{} failed", cl.getCommandSpec().qualifiedName(), e);
		return EXIT_ERROR;
	}

	/** The version from the build. */
	static final class Version implements CommandLine.IVersionProvider {

		@Override
		public String[] getVersion() throws IOException {
			Properties p = new Properties();
			try (InputStream in = KVFerryCli.class.getResourceAsStream("version.properties")) {
				if (in != null) {
					p.load(in);
				}
			}
			return new String[] { "kvferry " + p.getProperty("version", "(unknown version)"),
					"Java " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")" };
		}
	}
}
