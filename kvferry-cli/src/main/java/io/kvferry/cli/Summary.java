package io.kvferry.cli;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.RoomPhases;
import io.kvferry.RoomPhases.Phase;
import io.kvferry.harness.RoomResult;
import org.HdrHistogram.Histogram;

/**
 * The figures of a finished batch: rooms, pages, bytes, throughput, latency percentiles, where the rooms' time went
 * (their {@link RoomPhases}) and failures, as a table for people and as one JSON object for scripts. Immutable once
 * built.
 */
final class Summary {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final int MAX_REASONS = 10;
	private static final Pattern ROOM_PREFIX = Pattern.compile("KVTransferError\\(bootstrap_room=-?\\d+\\): ");
	// "room 7" in the engine's reasons, "Request 7" in a state timeout's (SGLang's words).
	private static final Pattern ROOM_ID = Pattern.compile("\\b(room|Request) -?\\d+");

	private final String title;
	private final int requests;
	private final int completed;
	private final int failures;
	private final int skipped;
	private final long pages;
	private final long bytes;
	private final long elapsedNanos;
	private final Histogram latencyMicros;
	private final List<String> reasons;
	// Every phase some succeeded room went through, in the order rooms pass them.
	private final List<PhaseFigures> phases;
	// The data path the rooms took ("shared memory (same host)", "TCP"), or null when not known.
	private String transport;
	// The signal that stopped the batch ("SIGTERM"), or null when it ran to its end.
	private String stoppedBy;

	private Summary(String title, int requests, BatchRunner.Outcome outcome) {
		this.title = title;
		this.requests = requests;
		this.skipped = outcome.skipped();
		this.elapsedNanos = outcome.elapsedNanos();
		this.latencyMicros = new Histogram(3);
		int ok = 0;
		int failed = 0;
		long p = 0;
		long b = 0;
		Map<String, Integer> why = new LinkedHashMap<>();
		Phase[] all = Phase.values();
		long[][] phaseNanos = new long[all.length][outcome.results().size()];
		int[] phaseRooms = new int[all.length];
		for (RoomResult r : outcome.results()) {
			if (r.ok()) {
				ok++;
				p += r.pages();
				b += r.bytes();
				latencyMicros.recordValue(Math.max(1, r.latencyNanos() / 1_000));
				for (Phase phase : all) {
					if (r.phases().has(phase)) {
						phaseNanos[phase.ordinal()][phaseRooms[phase.ordinal()]++] = r.phases().nanos(phase);
					}
				}
			}
			else {
				failed++;
				// Group rooms that failed for the same reason: drop the room ids.
				String reason = ROOM_PREFIX.matcher(r.failure()).replaceAll("");
				why.merge(ROOM_ID.matcher(reason).replaceAll("$1 N"), 1, Integer::sum);
			}
		}
		this.completed = ok;
		this.failures = failed;
		this.pages = p;
		this.bytes = b;
		List<String> lines = new ArrayList<>();
		why.forEach((reason, n) -> lines.add(n == 1 ? reason : n + " rooms: " + reason));
		this.reasons = List.copyOf(lines.subList(0, Math.min(MAX_REASONS, lines.size())));
		List<PhaseFigures> figures = new ArrayList<>();
		for (Phase phase : all) {
			int n = phaseRooms[phase.ordinal()];
			if (n > 0) {
				long[] sorted = Arrays.copyOf(phaseNanos[phase.ordinal()], n);
				Arrays.sort(sorted);
				figures.add(new PhaseFigures(phase.tag(), percentile(sorted, 50) / 1e6, percentile(sorted, 99) / 1e6,
						n));
			}
		}
		this.phases = List.copyOf(figures);
	}

	/**
	 * One phase across the succeeded rooms that went through it: a room that did not is left out, not counted as zero.
	 *
	 * @param tag the phase's {@link Phase#tag()}
	 * @param p50Millis its median
	 * @param p99Millis its 99th percentile
	 * @param rooms the succeeded rooms that went through it
	 */
	private record PhaseFigures(String tag, double p50Millis, double p99Millis, int rooms) {
	}

	/**
	 * Nearest rank, exact: a phase's percentiles come from every room's own nanoseconds (a few longs per room), so
	 * that a sub-millisecond phase keeps its figure instead of a histogram bucket's.
	 */
	private static long percentile(long[] sorted, int percent) {
		int rank = (int) ((percent * (long) sorted.length + 99) / 100);
		return sorted[Math.max(1, rank) - 1];
	}

	/**
	 * @param title what ran (first line of the table)
	 * @param requests requests asked for
	 * @param outcome what happened
	 * @return the summary
	 */
	static Summary of(String title, int requests, BatchRunner.Outcome outcome) {
		return new Summary(title, requests, outcome);
	}

	/**
	 * @param path the data path the rooms took, for the summary's {@code transport} line
	 * @return this summary
	 */
	Summary transport(String path) {
		this.transport = path;
		return this;
	}

	/**
	 * @param signal the signal that stopped the batch: the rooms it kept from starting are skipped, no failure
	 * @return this summary
	 */
	Summary stoppedBy(String signal) {
		this.stoppedBy = signal;
		return this;
	}

	/**
	 * @return true only when every room that ran succeeded and every byte matched, and every requested room ran but
	 *         those a stop signal kept from starting
	 */
	boolean verified() {
		return failures == 0 && completed + (stoppedBy == null ? 0 : skipped) == requests;
	}

	int failures() {
		return failures;
	}

	/** @return distinct failure reasons (at most ten), each with its count when more than one room failed so */
	List<String> reasons() {
		return reasons;
	}

	/** @return decimal gigabytes per second of verified KV bytes over the batch's wall time */
	double gbps() {
		return elapsedNanos == 0 ? 0 : bytes / (double) elapsedNanos;
	}

	private double percentileMillis(double percentile) {
		return latencyMicros.getTotalCount() == 0 ? 0 : latencyMicros.getValueAtPercentile(percentile) / 1_000.0;
	}

	private double maxMillis() {
		return latencyMicros.getTotalCount() == 0 ? 0 : latencyMicros.getMaxValue() / 1_000.0;
	}

	/** @return the summary as one JSON object (one line) */
	String toJson() {
		ObjectNode o = JSON.createObjectNode();
		o.put("requests", requests);
		o.put("completed", completed);
		o.put("failures", failures);
		o.put("skipped", skipped);
		o.put("pages", pages);
		o.put("bytes", bytes);
		o.put("seconds", round(elapsedNanos / 1e9, 3));
		o.put("gbps", round(gbps(), 3));
		o.put("p50_ms", round(percentileMillis(50), 3));
		o.put("p99_ms", round(percentileMillis(99), 3));
		o.put("max_ms", round(maxMillis(), 3));
		if (transport != null) {
			o.put("transport", transport);
		}
		if (stoppedBy != null) {
			o.put("stopped_by", stoppedBy);
		}
		ObjectNode byTag = o.putObject("phases");
		for (PhaseFigures f : phases) {
			ObjectNode phase = byTag.putObject(f.tag());
			phase.put("p50_ms", round(f.p50Millis(), 3));
			phase.put("p99_ms", round(f.p99Millis(), 3));
			phase.put("rooms", f.rooms());
		}
		o.put("verified", verified());
		o.putArray("failure_reasons").addAll(reasons.stream().map(o::textNode).toList());
		return o.toString();
	}

	/** @return the summary as an aligned table, one line per figure */
	String table() {
		StringBuilder sb = new StringBuilder();
		sb.append(title).append('\n');
		row(sb, "requests", completed + " of " + requests + " verified"
				+ (failures > 0 ? ", " + failures + " failed" : "") + (skipped > 0 ? ", " + skipped + " skipped" : "")
				+ (stoppedBy == null ? "" : " (stopped by " + stoppedBy + ")"));
		row(sb, "pages", String.format(Locale.ROOT, "%,d", pages));
		row(sb, "bytes", String.format(Locale.ROOT, "%,d (%s)", bytes, Sizes.bytes(bytes)));
		if (transport != null) {
			row(sb, "transport", transport);
		}
		row(sb, "wall time", String.format(Locale.ROOT, "%.2f s", elapsedNanos / 1e9));
		row(sb, "throughput", String.format(Locale.ROOT, "%.2f GB/s", gbps()));
		row(sb, "latency p50", String.format(Locale.ROOT, "%.1f ms", percentileMillis(50)));
		row(sb, "latency p99", String.format(Locale.ROOT, "%.1f ms", percentileMillis(99)));
		row(sb, "latency max", String.format(Locale.ROOT, "%.1f ms", maxMillis()));
		// The longer tags get a wider name column of their own rather than shifting their figures out of line.
		int width = phases.stream().mapToInt(f -> f.tag().length()).max().orElse(0);
		for (PhaseFigures f : phases) {
			sb.append(String.format(Locale.ROOT, "  %-" + Math.max(12, width) + "s p50 %.2f ms, p99 %.2f ms, %d "
					+ "rooms%n", f.tag(), f.p50Millis(), f.p99Millis(), f.rooms()));
		}
		row(sb, "failures", String.valueOf(failures));
		for (String r : reasons) {
			row(sb, "", r);
		}
		row(sb, "result", !verified() ? "FAILED" : skipped > 0 ? "OK: every byte of every room that ran matched"
				: "OK: every byte matched");
		return sb.toString();
	}

	private static void row(StringBuilder sb, String name, String value) {
		sb.append(String.format(Locale.ROOT, "  %-12s %s%n", name, value));
	}

	private static double round(double v, int digits) {
		double f = Math.pow(10, digits);
		return Math.round(v * f) / f;
	}
}
