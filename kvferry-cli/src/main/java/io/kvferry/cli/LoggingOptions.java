package io.kvferry.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Option;

/** {@code --verbose}: INFO logs instead of WARN. Logs always go to stderr; stdout is for results. */
final class LoggingOptions {

	@Option(names = "--verbose", description = "Log at INFO (default: WARN only). Logs go to stderr.")
	void verbose(boolean verbose) {
		// Picocli also calls this with the default (false): leave the configured levels alone then.
		if (!verbose) {
			return;
		}
		ILoggerFactory factory = LoggerFactory.getILoggerFactory();
		if (factory instanceof LoggerContext context) {
			context.getLogger(Logger.ROOT_LOGGER_NAME).setLevel(Level.INFO);
			context.getLogger("io.kvferry").setLevel(Level.INFO);
		}
	}
}
