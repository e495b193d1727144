package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;

import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.bootstrap.server.StopSignal;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import reactor.core.publisher.Mono;

/**
 * {@code kvferry bootstrap}: the bootstrap server (SGLang's route registry) in its own process, until stopped.
 */
@Command(name = "bootstrap", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Runs the bootstrap server where prefill ranks register and decode ranks look them up (SGLang's "
						+ "/route protocol), until SIGINT or SIGTERM. Prints one line when listening.",
				"" },
		footer = { "", "On SIGTERM or SIGINT it stops listening, lets requests in flight finish for up to "
				+ "--drain-timeout and exits with status 0." })
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
	DrainOptions drain;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() {
		if (port < 0 || port > 65535) {
			throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--port : " + port
					+ " (expected: 0..65535)");
		}
		drain.validate(spec.commandLine());
		DisposableBootstrapServer server = BootstrapServer.create().host(host).port(port).bindNow();
		Mono<String> stop = StopSignal.install();
		PrintWriter out = spec.commandLine().getOut();
		out.println("kvferry bootstrap: listening on " + server.address());
		out.flush();
		String signal = Mono.firstWithSignal(stop, server.onDispose().thenReturn("")).block();
		long start = System.nanoTime();
		String outcome = "drained";
		try {
			server.disposeNow(drain.drainTimeout.isZero() ? Duration.ofMillis(1) : drain.drainTimeout);
		}
		catch (IllegalStateException e) {
			// Past the deadline: what is still open is closed, its requests aborted.
			server.dispose();
			outcome = "closed the requests still in flight after " + drain.drainTimeout;
		}
		out.printf("kvferry bootstrap: %s, %s in %d ms%n", signal.isEmpty() ? "closed" : signal, outcome,
				(System.nanoTime() - start) / 1_000_000);
		out.flush();
		return 0;
	}
}
