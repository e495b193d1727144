package io.kvferry.bootstrap.server;

import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import sun.misc.Signal;

/**
 * SIGTERM and SIGINT as a value, for a process that serves until it is asked to stop: the standalone bootstrap server
 * ({@link BootstrapServerMain}) and the {@code kvferry} commands drain on them and then return their own exit status,
 * instead of the JVM exiting with 143 while shutdown hooks race the work in flight. A second signal while the first one
 * is handled is ignored: the drain deadline bounds the shutdown.
 *
 * <pre>{@code
 * Mono<String> stop = StopSignal.install();
 * DisposableBootstrapServer server = BootstrapServer.create().port(8998).bindNow();
 * String signal = Mono.firstWithSignal(stop, server.onDispose().thenReturn("")).block();
 * server.disposeNow(Duration.ofSeconds(30));
 * }</pre>
 */
public final class StopSignal {

	private static final Logger log = LoggerFactory.getLogger(StopSignal.class);
	private static final List<String> SIGNALS = List.of("TERM", "INT");

	private StopSignal() {
	}

	/**
	 * Replaces the JVM's handlers of SIGTERM and SIGINT, for the rest of the process.
	 *
	 * @return emits the first signal's name ({@code SIGTERM}); never completes empty nor errors
	 */
	public static Mono<String> install() {
		Sinks.One<String> first = Sinks.one();
		for (String name : SIGNALS) {
			try {
				Signal.handle(new Signal(name), s -> first.tryEmitValue("SIG" + s.getName()));
			}
			catch (IllegalArgumentException e) {
				// A platform without this signal (or a JVM that reserved it, -Xrs) keeps its default behaviour.
				log.warn("cannot handle SIG{}: {}; it stops the process without draining", name, e.getMessage());
			}
		}
		return first.asMono();
	}
}
