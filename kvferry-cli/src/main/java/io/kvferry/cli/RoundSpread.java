package io.kvferry.cli;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * How far one run's interleaved rounds can be trusted: kvferry and its baseline timed in turn, round after round, so
 * that each round's ratio compares the two on the same machine state. On a VM whose speed drifts by a fifth within a
 * minute, the ratio of two medians taken from different moments moves with the drift; the median of the rounds' own
 * ratios moves much less, and the spread of the baseline's rounds says whether the machine itself was steady.
 *
 * <p>A spread is the distance between the 10th and 90th percentile (nearest rank: the worst and best of ten rounds or
 * fewer) over the median. A comparison whose baseline spread exceeds {@link #NOISY} is flagged: its ratio is not a
 * figure to quote, whatever it says.
 */
final class RoundSpread {

	/** A baseline whose rounds spread wider than this (relative to their median) marks the comparison as noisy. */
	static final double NOISY = 0.25;

	/** What a comparison's spread is called in the result: its ratio's name with this after it. */
	static final String SUFFIX = "_spread";

	private RoundSpread() {
	}

	/**
	 * The spread of a comparison whose figures grow with speed (throughput): each round's ratio is kvferry over the
	 * baseline.
	 *
	 * @param kvferry kvferry's figure per round
	 * @param baseline the baseline's figure in the same rounds
	 * @return rounds, the rounds' ratio (median, min, max), kvferry's and the baseline's spread, and whether it is noisy
	 */
	static ObjectNode ofRates(double[] kvferry, double[] baseline) {
		if (kvferry.length != baseline.length || kvferry.length == 0) {
			throw new IllegalArgumentException("rounds: kvferry " + kvferry.length + ", baseline " + baseline.length
					+ " (expected: the same, at least one)");
		}
		double[] ratios = new double[kvferry.length];
		for (int i = 0; i < ratios.length; i++) {
			ratios[i] = baseline[i] > 0 ? kvferry[i] / baseline[i] : 0;
		}
		Arrays.sort(ratios);
		double baselineSpread = spread(baseline);
		ObjectNode o = BenchCommand.JSON.createObjectNode();
		o.put("rounds", ratios.length);
		o.put("ratio_median", BenchCommand.round(ratios[ratios.length / 2]));
		o.put("ratio_min", BenchCommand.round(ratios[0]));
		o.put("ratio_max", BenchCommand.round(ratios[ratios.length - 1]));
		o.put("kvferry_spread", BenchCommand.round(spread(kvferry)));
		o.put("baseline_spread", BenchCommand.round(baselineSpread));
		o.put("noisy", baselineSpread > NOISY);
		return o;
	}

	/**
	 * The spread of latencies taken in turn (a room, then a round trip, thousands of times): single latencies spread
	 * by their nature, so the iterations are cut into {@code blocks} consecutive blocks and each block's medians make
	 * a round, whose ratio is kvferry's time over the baseline's, as the comparison's own ratio is.
	 *
	 * @param kvferry kvferry's nanoseconds per iteration
	 * @param baseline the baseline's nanoseconds in the same iterations
	 * @param blocks rounds to cut the iterations into (fewer when there are fewer iterations)
	 */
	static ObjectNode ofLatencies(long[] kvferry, long[] baseline, int blocks) {
		int n = Math.max(1, Math.min(blocks, kvferry.length));
		double[] k = new double[n];
		double[] b = new double[n];
		for (int i = 0; i < n; i++) {
			int from = (int) ((long) kvferry.length * i / n);
			int to = (int) ((long) kvferry.length * (i + 1) / n);
			k[i] = median(Arrays.copyOfRange(kvferry, from, to));
			b[i] = median(Arrays.copyOfRange(baseline, from, to));
		}
		return ofRates(k, b);
	}

	/**
	 * The spread of rates measured as times: each round's rate is {@code 1 / time}, so each round's ratio is the
	 * baseline's time over kvferry's.
	 *
	 * @param kvferry kvferry's nanoseconds per round ({@link Long#MAX_VALUE}: the round failed)
	 * @param baseline the baseline's nanoseconds in the same rounds
	 */
	static ObjectNode ofRatesTimed(long[] kvferry, long[] baseline) {
		return ofRates(rates(kvferry), rates(baseline));
	}

	/**
	 * Finds the comparisons flagged noisy anywhere in a bench result.
	 *
	 * @return their paths, such as {@code bulk.ratio2} or {@code ucx[0].many.ratio}, in the order of the result
	 */
	static List<String> noisy(JsonNode result) {
		List<String> paths = new ArrayList<>();
		collect(result, "", paths);
		return paths;
	}

	private static void collect(JsonNode node, String path, List<String> paths) {
		if (node.isArray()) {
			for (int i = 0; i < node.size(); i++) {
				collect(node.get(i), path + "[" + i + "]", paths);
			}
			return;
		}
		for (Map.Entry<String, JsonNode> field : node.properties()) {
			String name = field.getKey();
			JsonNode value = field.getValue();
			if (name.endsWith(SUFFIX) && value.path("noisy").asBoolean()) {
				paths.add((path.isEmpty() ? "" : path + ".") + name.substring(0, name.length() - SUFFIX.length()));
			}
			else if (value.isContainerNode()) {
				collect(value, (path.isEmpty() ? "" : path + ".") + name, paths);
			}
		}
	}

	/** @return the 10th-90th percentile distance over the median (0 for a median of 0) */
	static double spread(double[] values) {
		double[] v = values.clone();
		Arrays.sort(v);
		double median = v[v.length / 2];
		if (median <= 0) {
			return 0;
		}
		int low = (int) Math.floor(0.1 * (v.length - 1));
		int high = (int) Math.ceil(0.9 * (v.length - 1));
		return (v[high] - v[low]) / median;
	}

	private static double median(long[] values) {
		Arrays.sort(values);
		return values[values.length / 2];
	}

	private static double[] rates(long[] nanos) {
		double[] r = new double[nanos.length];
		for (int i = 0; i < r.length; i++) {
			r[i] = nanos[i] == Long.MAX_VALUE || nanos[i] <= 0 ? 0 : 1.0 / nanos[i];
		}
		return r;
	}
}
