package io.kvferry.cli;

import io.kvferry.KVLayout;
import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.harness.ModelShape;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Parallel layouts of the prefill and decode instances on the command line. Every rank of an instance runs in the one
 * process (one manager and one memory pool per rank), as GPUs of one node would.
 */
final class LayoutOptions {

	private LayoutOptions() {
	}

	/**
	 * Checks that a prefill and a decode instance can work together, by the rules a decode rank applies when it plans
	 * its prefill ranks, before anything starts.
	 *
	 * @throws CommandLine.ParameterException naming both options and the rule
	 */
	static void checkPair(CommandLine cl, Prefill prefill, Decode decode, ModelShape shape) {
		PrefillParallelInfo info = new PrefillParallelInfo(prefill.tp, prefill.dp, prefill.pp, shape.pageSize());
		try {
			for (int pp = 0; pp < decode.pp; pp++) {
				ParallelLayout rank = new ParallelLayout(decode.tp, 0, 1, 0, 1, 0, decode.pp, pp);
				info.checkDecode(rank, shape.pageSize(), shape.mla());
			}
		}
		catch (TopologyException e) {
			throw new CommandLine.ParameterException(cl, "--prefill-tp " + prefill.tp + " --prefill-pp " + prefill.pp
					+ " with --decode-tp " + decode.tp + " --decode-pp " + decode.pp + " cannot work together: "
					+ e.getMessage());
		}
	}

	/** @throws CommandLine.ParameterException when TP ranks cannot hold whole KV heads */
	private static void checkHeads(CommandLine cl, String option, int tp, ModelShape shape) {
		int heads = shape.kvHeads();
		boolean whole = shape.mla() || (tp <= heads ? heads % tp == 0 : tp % heads == 0);
		if (!whole) {
			throw new CommandLine.ParameterException(cl, option + " : " + tp + " (expected: a divisor or a multiple of "
					+ "--kv-heads " + heads + ", so that every rank holds whole KV heads)");
		}
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

		@Option(names = "--prefill-cp", defaultValue = "1", paramLabel = "N",
				description = "Prefill attention context-parallel size: only CP rank 0 sends unless --all-cp-ranks "
						+ "(default: ${DEFAULT-VALUE}).")
		int cp;

		@Option(names = "--all-cp-ranks", description = "With --prefill-cp above 1, every CP rank sends its "
				+ "contiguous share of each room's pages (SGLang's SGLANG_DISAGGREGATION_ALL_CP_RANKS_TRANSFER).")
		boolean allCpRanks;

		@Option(names = "--prefill-kv-layout", defaultValue = "NHD", paramLabel = "NHD|HND",
				description = "How prefill orders each KV page: NHD token-major, HND head-major; it re-lays what it "
						+ "sends into decode's layout (default: ${DEFAULT-VALUE}).")
		KVLayout kvLayout;

		/** @throws CommandLine.ParameterException naming the bad option */
		void validate(CommandLine cl, ModelShape shape) {
			int layers = shape.layers();
			ModelOptions.positive(cl, "--prefill-tp", tp);
			ModelOptions.positive(cl, "--prefill-pp", pp);
			ModelOptions.positive(cl, "--prefill-dp", dp);
			ModelOptions.positive(cl, "--prefill-cp", cp);
			if (allCpRanks && cp == 1) {
				throw new CommandLine.ParameterException(cl, "--all-cp-ranks needs --prefill-cp above 1");
			}
			checkHeads(cl, "--prefill-tp", tp, shape);
			if (layers % pp != 0) {
				throw new CommandLine.ParameterException(cl, "--prefill-pp : " + pp
						+ " (expected: a divisor of --layers " + layers + ")");
			}
		}

		int ranks() {
			return tp * pp * dp * cp;
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

		@Option(names = "--decode-kv-layout", defaultValue = "NHD", paramLabel = "NHD|HND",
				description = "How decode orders each KV page: NHD token-major, HND head-major; prefill re-lays what "
						+ "it sends into it, and decode checks every byte in it (default: ${DEFAULT-VALUE}).")
		KVLayout kvLayout;

		/** @throws CommandLine.ParameterException naming the bad option */
		void validate(CommandLine cl, ModelShape shape) {
			int layers = shape.layers();
			ModelOptions.positive(cl, "--decode-tp", tp);
			ModelOptions.positive(cl, "--decode-pp", pp);
			checkHeads(cl, "--decode-tp", tp, shape);
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
