package io.kvferry.examples;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Parallel layouts of the prefill and decode instances on the command line. Every rank of an instance runs in the one
 * process (one manager and one memory pool per rank), as GPUs of one node would.
 */
final class LayoutOptions {

	private LayoutOptions() {
	}

	/** The prefill instance: attention TP, PP and DP sizes. */
	static final class Prefill {

		@Option(names = "--prefill-tp", defaultValue = "1", paramLabel = "N",
				description = "Prefill attention TP size (default: ${DEFAULT-VALUE}).")
		int tp;

		@Option(names = "--prefill-pp", defaultValue = "1", paramLabel = "N",
				description = "Prefill PP size; must divide --layers (default: ${DEFAULT-VALUE}).")
		int pp;

		@Option(names = "--prefill-dp", defaultValue = "1", paramLabel = "N",
				description = "Prefill attention DP size; rooms go to DP group room mod N (default: ${DEFAULT-VALUE}).")
		int dp;

		/** @throws CommandLine.ParameterException naming the bad option */
		void validate(CommandLine cl, int layers) {
			ModelOptions.positive(cl, "--prefill-tp", tp);
			ModelOptions.positive(cl, "--prefill-pp", pp);
			ModelOptions.positive(cl, "--prefill-dp", dp);
			if (layers % pp != 0) {
				throw new CommandLine.ParameterException(cl, "--prefill-pp : " + pp
						+ " (expected: a divisor of --layers " + layers + ")");
			}
		}

		int ranks() {
			return tp * pp * dp;
		}
	}

	/** The decode instance: attention TP and PP sizes. */
	static final class Decode {

		@Option(names = "--decode-tp", defaultValue = "1", paramLabel = "N",
				description = "Decode attention TP size (default: ${DEFAULT-VALUE}).")
		int tp;

		@Option(names = "--decode-pp", defaultValue = "1", paramLabel = "N",
				description = "Decode PP size: 1, or equal to the prefill PP size (default: ${DEFAULT-VALUE}).")
		int pp;

		/** @throws CommandLine.ParameterException naming the bad option */
		void validate(CommandLine cl, int layers) {
			ModelOptions.positive(cl, "--decode-tp", tp);
			ModelOptions.positive(cl, "--decode-pp", pp);
			if (layers % pp != 0) {
				throw new CommandLine.ParameterException(cl, "--decode-pp : " + pp
						+ " (expected: a divisor of --layers " + layers + ")");
			}
		}

		int ranks() {
			return tp * pp;
		}
	}
}
