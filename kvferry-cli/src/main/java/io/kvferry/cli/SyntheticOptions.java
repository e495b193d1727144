package io.kvferry.cli;

import java.util.List;

import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.synthetic.SyntheticPattern;
import io.kvferry.transport.synthetic.SyntheticPrefill;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code decode --synthetic}: decode's own managers against an in-process synthetic prefill instance that fills every
 * room with the pattern decode checks, at a configurable rate; no bootstrap server, no prefill process, no network.
 */
final class SyntheticOptions {

	@Option(names = "--synthetic", description = "Decode without prefill: rooms are served in-process by a synthetic "
			+ "prefill instance of decode's sizes that fills every page with the pattern decode checks, through "
			+ "decode's own states, stripes and ledger (no --bootstrap, no prefill process, no network).")
	boolean enabled;

	@Option(names = "--rate", defaultValue = "0", paramLabel = "GB/S",
			description = "With --synthetic: bytes the synthetic instance sends per second, in GB/s (10^9 bytes) over "
					+ "all its ranks; 0 for as fast as decode takes them (default: ${DEFAULT-VALUE}).")
	double rateGbps;

	// Set once decode's ranks exist, before any room starts: what each synthetic rank writes is what its decode rank
	// checks.
	private volatile SyntheticPattern pattern;

	/** @throws CommandLine.ParameterException for --rate without --synthetic, or a rate out of range */
	void validate(CommandLine cl) {
		if (!(rateGbps >= 0) || Double.isInfinite(rateGbps) || rateGbps * 1e9 > Long.MAX_VALUE) {
			throw new CommandLine.ParameterException(cl, "--rate : " + rateGbps + " (expected: GB/s >= 0, 0 for "
					+ "unlimited)");
		}
		if (rateGbps > 0 && !enabled) {
			throw new CommandLine.ParameterException(cl, "--rate : " + rateGbps + " without --synthetic (expected: "
					+ "the rate of a synthetic prefill instance; a real one sends as fast as it computes)");
		}
	}

	/** @return the bytes per second the synthetic instance sends, 0 for unlimited */
	long bytesPerSecond() {
		return Math.round(rateGbps * 1e9);
	}

	/**
	 * @return a synthetic instance of decode's TP and PP sizes and page size, whose ranks write the pattern of
	 *         {@link #checkedBy}'s ranks
	 */
	SyntheticPrefill source(ModelShape shape, int tp, int pp) {
		return SyntheticPrefill.builder().attnTpSize(tp).ppSize(pp).pageSize(shape.pageSize()).rate(bytesPerSecond())
				.pattern((rank, room, kind, region, ordinal, address, length) -> pattern.fill(rank, room, kind, region,
						ordinal, address, length))
				.build();
	}

	/** Makes the synthetic ranks write what these decode ranks check; before the first room. */
	void checkedBy(List<RankMemory> decodeRanks) {
		pattern = RankMemory.synthetic(decodeRanks);
	}

	/** @return how the summary names the path: the synthetic instance and its rate */
	String describe() {
		return "synthetic prefill in-process, " + (rateGbps == 0 ? "unlimited rate" : rateGbps + " GB/s");
	}
}
