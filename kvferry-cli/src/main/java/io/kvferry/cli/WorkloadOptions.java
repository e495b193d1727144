package io.kvferry.cli;

import picocli.CommandLine;
import picocli.CommandLine.Option;

/** The batch a decode side asks for: how many requests, how many at once, their prompt lengths and memory. */
final class WorkloadOptions {

	@Option(names = "--requests", defaultValue = "64", paramLabel = "N",
			description = "Requests (rooms) in the batch (default: ${DEFAULT-VALUE}).")
	int requests;

	@Option(names = "--concurrency", defaultValue = "4", paramLabel = "N",
			description = "Rooms in flight at most; fewer when their pages do not fit the pool (default: "
					+ "${DEFAULT-VALUE}).")
	int concurrency;

	@Option(names = "--min-tokens", defaultValue = "128", paramLabel = "N",
			description = "Shortest prompt (default: ${DEFAULT-VALUE}).")
	int minTokens;

	@Option(names = "--max-tokens", defaultValue = "12288", paramLabel = "N",
			description = "Longest prompt; one request always has this length, most are much shorter "
					+ "(default: ${DEFAULT-VALUE}).")
	int maxTokens;

	@Option(names = "--seed", defaultValue = "42", paramLabel = "N",
			description = "Seed of the prompt lengths and page placement (default: ${DEFAULT-VALUE}).")
	long seed;

	@Option(names = "--chunk-tokens", defaultValue = "4096", paramLabel = "N",
			description = "Prefill sends a room in chunks of this many tokens, as chunked prefill does "
					+ "(default: ${DEFAULT-VALUE}).")
	int chunkTokens;

	@Option(names = "--pool-mib", defaultValue = "1536", paramLabel = "MIB",
			description = "KV memory budget of each instance, in MiB; raised to fit the longest request "
					+ "(default: ${DEFAULT-VALUE}).")
	long poolMib;

	/** @throws CommandLine.ParameterException naming the bad option */
	@Option(names = "--decode-prefix", defaultValue = "0", paramLabel = "FRACTION",
			description = "Share of each request's pages decode already holds in its prefix cache, 0..1 (rounded down "
					+ "to whole pages; 1 is a full hit: only aux and state move). Default: ${DEFAULT-VALUE}.")
	double decodePrefix;

	void validate(CommandLine cl) {
		if (decodePrefix < 0 || decodePrefix > 1) {
			throw new CommandLine.ParameterException(cl, "--decode-prefix : " + decodePrefix + " (expected: 0..1)");
		}
		ModelOptions.positive(cl, "--requests", requests);
		ModelOptions.positive(cl, "--concurrency", concurrency);
		ModelOptions.positive(cl, "--min-tokens", minTokens);
		ModelOptions.positive(cl, "--chunk-tokens", chunkTokens);
		ModelOptions.positive(cl, "--pool-mib", poolMib);
		if (maxTokens < minTokens) {
			throw new CommandLine.ParameterException(cl, "--max-tokens : " + maxTokens + " (expected: >= --min-tokens "
					+ minTokens + ")");
		}
	}

	/**
	 * @param pageSize tokens per page
	 * @param roomSeed seed of the room ids
	 * @return the batch
	 */
	Workload workload(int pageSize, long roomSeed) {
		return Workload.generate(requests, minTokens, maxTokens, pageSize, seed, roomSeed);
	}

	/** @return how many {@code send} calls a room of {@code tokens} tokens takes */
	int chunks(int tokens) {
		return Math.max(1, (tokens + chunkTokens - 1) / chunkTokens);
	}
}
