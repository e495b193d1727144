package io.kvferry.cli;

import picocli.CommandLine.Option;
import picocli.CommandLine;

/** The bench's page-size-1 scenario: how many rooms, how long, how many rounds. */
final class TinyPagesOptions {

	@Option(names = "--tiny-rooms", defaultValue = "2", paramLabel = "N",
			description = "Concurrent rooms of a tiny_pages batch (default: ${DEFAULT-VALUE}).")
	int rooms;

	@Option(names = "--tiny-tokens", defaultValue = "4096", paramLabel = "TOKENS",
			description = "Longest tiny_pages room; each room has between a quarter of it and all of it "
					+ "(default: ${DEFAULT-VALUE}).")
	int maxTokens;

	@Option(names = "--tiny-rounds", defaultValue = "5", paramLabel = "N",
			description = "Timed tiny_pages batches (and pump runs, in turn) per rank layout (default: "
					+ "${DEFAULT-VALUE}).")
	int rounds;

	// The JIT keeps compiling the data path for several batches (its threads took a fifth to two fifths of a 2-core
	// machine during the batches that followed a single warm-up batch), and there it competes with the batch itself.
	@Option(names = "--tiny-warmup", defaultValue = "10", paramLabel = "BATCHES",
			description = "Untimed tiny_pages batches (and pump runs) per rank layout before the timed ones "
					+ "(default: ${DEFAULT-VALUE}).")
	int warmup;

	@Option(names = "--tiny-only", description = "Measure only the tiny_pages scenario (no bulk, so no ratio to "
			+ "bulk).")
	boolean only;

	/** @throws CommandLine.ParameterException naming the bad option */
	void validate(CommandLine cl) {
		ModelOptions.positive(cl, "--tiny-rooms", rooms);
		ModelOptions.positive(cl, "--tiny-rounds", rounds);
		if (maxTokens < 4) {
			throw new CommandLine.ParameterException(cl, "--tiny-tokens : " + maxTokens + " (expected: >= 4)");
		}
		if (warmup < 1) {
			throw new CommandLine.ParameterException(cl, "--tiny-warmup : " + warmup + " (expected: >= 1)");
		}
	}
}
