package io.kvferry.examples.engine;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

import io.kvferry.KVPoll;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * {@code kvferry demo --engine tiny}: the tiny transformer prefilled on one instance and decoded on another from the
 * transferred KV, checked against the same model run in one process. The header goes to stderr, each request's
 * prompt, states, tokens and verdict to stdout.
 */
public final class TinyEngineDemo {

	/** The engine {@code --engine} accepts. */
	public static final String TINY = "tiny";

	private static final Set<String> OPTIONS = Set.of("--engine", "--prefill-tp", "--decode-tp", "--verbose");
	private static final int[] PROMPT_LENGTHS = { 12, 8, 11 };
	// Prompts whose greedy continuations wander rather than repeat one token, which reads better in a demo.
	private static final long PROMPT_SEED = 10;

	private TinyEngineDemo() {
	}

	/**
	 * Runs the demo.
	 *
	 * @param cl the {@code demo} command line (its other options are refused: they describe byte-pattern runs)
	 * @param engine the {@code --engine} value
	 * @param prefillTp {@code --prefill-tp}
	 * @param decodeTp {@code --decode-tp}
	 * @return 0 when every request matched the reference, 1 otherwise
	 * @throws CommandLine.ParameterException for an unknown engine, a TP size the model cannot split its heads over,
	 *         or an option the engine demo does not use
	 * @throws InterruptedException when interrupted while decode waits for a transfer
	 */
	public static int run(CommandLine cl, String engine, int prefillTp, int decodeTp) throws InterruptedException {
		if (!TINY.equals(engine)) {
			throw new CommandLine.ParameterException(cl, "--engine : " + engine + " (expected: " + TINY + ")");
		}
		for (OptionSpec o : cl.getParseResult().matchedOptions()) {
			if (!OPTIONS.contains(o.longestName())) {
				throw new CommandLine.ParameterException(cl, o.longestName() + " : not used with --engine (expected: "
						+ "only " + String.join(", ", OPTIONS.stream().sorted().toList()) + ")");
			}
		}
		TinyConfig m = TinyConfig.tiny();
		checkTp(cl, "--prefill-tp", m, prefillTp);
		checkTp(cl, "--decode-tp", m, decodeTp);
		TinyEngine tiny = TinyEngine.of(prefillTp, decodeTp);

		PrintWriter out = cl.getOut();
		PrintWriter err = cl.getErr();
		err.printf("kvferry demo --engine tiny: %d layers, %d query and %d KV heads of %d (%s), page size %d, "
				+ "prefill TP%d -> decode TP%d over TCP loopback%n", m.layers(), m.queryHeads(), m.kvHeads(),
				m.headDim(), RankKVCache.DTYPE, tiny.pageSize(), prefillTp, decodeTp);
		err.flush();
		List<int[]> prompts = tiny.prompts(PROMPT_SEED, PROMPT_LENGTHS);
		List<Generation> reference = tiny.runInOneProcess(prompts);
		Map<Long, int[]> landedPages = new ConcurrentHashMap<>();
		List<Generation> results = tiny.runDisaggregated(prompts, (room, cache, table) -> landedPages.put(room,
				table.pages()));

		int matched = 0;
		double worst = 0;
		for (int i = 0; i < prompts.size(); i++) {
			Generation want = reference.get(i);
			Generation got = results.get(i);
			out.printf("room %d  prompt    %s (%d tokens)%n", got.room(), Arrays.toString(got.prompt()),
					got.prompt().length);
			out.printf("          states    %s%n", got.states().stream().map(KVPoll::name)
					.collect(Collectors.joining(" > ")));
			if (!got.ok()) {
				out.printf("          failed    %s%n", got.failure());
				continue;
			}
			double diff = got.maxLogitDifference(want);
			boolean same = got.sameTokens(want) && diff == 0;
			matched += same ? 1 : 0;
			worst = Math.max(worst, diff);
			out.printf("          landed in decode pages %s%n", Arrays.toString(landedPages.get(got.room())));
			out.printf("          tokens    %s (the first from prefill's aux row, %d decoded here)%n",
					Arrays.toString(got.tokens()), got.logits().length);
			out.printf("          reference %s %s (max logit difference %s)%n", Arrays.toString(want.tokens()),
					same ? "match" : "MISMATCH", diff);
		}
		boolean ok = matched == prompts.size();
		out.printf("%s: %d of %d requests decoded from transferred KV match the single-process reference (max "
				+ "logit difference %s)%n", ok ? "OK" : "FAILED", matched, prompts.size(), worst);
		out.flush();
		return ok ? 0 : 1;
	}

	private static void checkTp(CommandLine cl, String option, TinyConfig m, int tp) {
		List<Integer> valid = new ArrayList<>();
		for (int t = 1; t <= m.queryHeads(); t++) {
			if (splits(m, t)) {
				valid.add(t);
			}
		}
		if (!valid.contains(tp)) {
			throw new CommandLine.ParameterException(cl, option + " : " + tp + " (expected: one of " + valid + " for "
					+ m.kvHeads() + " KV heads and " + m.queryHeads() + " query heads)");
		}
	}

	private static boolean splits(TinyConfig m, int tp) {
		try {
			new HeadLayout(m.kvHeads(), m.queryHeads(), tp);
			return true;
		}
		catch (IllegalArgumentException e) {
			return false;
		}
	}
}
