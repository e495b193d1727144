package io.kvferry.cli;

import java.time.Duration;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/** {@code --drain-timeout}: how long a role stopped by SIGTERM or SIGINT lets its rooms in flight finish. */
final class DrainOptions {

	@Option(names = "--drain-timeout", defaultValue = "30s", paramLabel = "DURATION",
			description = "On SIGTERM or SIGINT admit no new rooms and let rooms in flight finish for up to this long; "
					+ "rooms still running then are aborted with the reason (default: ${DEFAULT-VALUE}; 0 aborts "
					+ "them at once).")
	Duration drainTimeout;

	/** @throws CommandLine.ParameterException for a negative timeout */
	void validate(CommandLine cl) {
		if (drainTimeout.isNegative()) {
			throw new CommandLine.ParameterException(cl, "--drain-timeout : " + drainTimeout + " (expected: >= 0)");
		}
	}
}
