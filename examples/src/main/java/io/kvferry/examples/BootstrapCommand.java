package io.kvferry.examples;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvferry bootstrap}: the bootstrap server (SGLang's route registry) in its own process, until stopped.
 */
@Command(name = "bootstrap", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Runs the bootstrap server where prefill ranks register and decode ranks look them up (SGLang's "
						+ "/route protocol), until SIGINT or SIGTERM. Prints one line when listening.",
				"" })
final class BootstrapCommand implements Callable<Integer> {

	@Spec
	CommandSpec spec;

	@Option(names = "--host", defaultValue = BootstrapServer.DEFAULT_HOST, paramLabel = "HOST",
			description = "Address to listen on (default: ${DEFAULT-VALUE}).")
	String host;

	@Option(names = "--port", defaultValue = "" + BootstrapServer.DEFAULT_PORT, paramLabel = "PORT",
			description = "Port to listen on, 0 for any free port (default: ${DEFAULT-VALUE}, SGLang's).")
	int port;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() {
		if (port < 0 || port > 65535) {
			throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--port : " + port
					+ " (expected: 0..65535)");
		}
		DisposableBootstrapServer server = BootstrapServer.create().host(host).port(port).bindNow();
		PrintWriter out = spec.commandLine().getOut();
		out.println("kvferry bootstrap: listening on " + server.address());
		out.flush();
		Runtime.getRuntime().addShutdownHook(new Thread(server::disposeNow, "kvferry-bootstrap-shutdown"));
		server.onDispose().block();
		return 0;
	}
}
