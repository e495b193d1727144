package io.kvferry.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.harness.ModelShape;

/** The bench's figures as a table for people (the JSON object is for programs). */
final class BenchTable {

	private BenchTable() {
	}

	/**
	 * @param r the figures, as {@code --json} prints them
	 * @param ok whether every room succeeded and every byte matched
	 */
	static String render(ObjectNode r, ModelShape shape, boolean ok) {
		StringBuilder sb = new StringBuilder();
		sb.append(String.format(Locale.ROOT,
				"kvferry bench: loopback, %s, TCP congestion control %s, %d cores, Java %s; %s%n",
				r.has("io") ? r.get("io").asText() : "epoll", r.path("tcp_congestion_control").asText("unknown"),
				Runtime.getRuntime().availableProcessors(), Runtime.version(), ModelOptions.describe(shape)));
		sb.append(String.format(Locale.ROOT, "  %-28s %14s %14s %8s%n", "", "kvferry", "baseline", "ratio"));
		rowLines(sb, r);
		if (r.has("same_host")) {
			var sameHost = r.get("same_host");
			sb.append(String.format(Locale.ROOT, "  %-28s %14s %9.2f GB/s %8s   (shared memory vs single-thread "
					+ "memcpy)%n", "same host 1<->1", sameHost.get("gbps").isNull() ? "-" : String.format(Locale.ROOT,
							"%9.2f GB/s", sameHost.get("gbps").asDouble()), sameHost.get("memcpy_gbps").asDouble(),
					sameHost.get("ratio").isNull() ? "-" : String.format(Locale.ROOT, "%.2f",
							sameHost.get("ratio").asDouble())));
		}
		if (r.has("bulk") && r.has("many")) {
			sb.append(String.format(Locale.ROOT, "  %-28s %,9d B per MB moved (all threads, timed bulk rooms)%n",
					"heap allocation", r.get("alloc_bytes_per_mb").asLong()));
		}
		if (r.has("scaling")) {
			sb.append(String.format(Locale.ROOT,
					"  scaling:%n  %-18s %8s %10s %8s %9s %9s %10s %10s %12s %12s %12s %12s%n", "", "rooms", "rooms/s", "GB/s", "p50 us", "p99 us", "CPU us/room", "threads us", "alloc B/room",
					"heap peak", "direct peak", "netty pool"));
			for (var row : r.get("scaling")) {
				String dim = row.get("dimension").asText();
				long v = row.get("value").asLong();
				String name = switch (dim) {
					case "rooms" -> v + " concurrent";
					case "room_bytes" -> Sizes.bytes(v) + " rooms";
					default -> v + "<->" + v + " ranks";
				};
				sb.append(String.format(Locale.ROOT, "  %-18s %8d %10d %8.2f %9d %9d %10d %10d %12d %12s %12s %12s%n",
						name, row.get("rooms").asInt(), row.get("rooms_per_second").asLong(), row.get("gbps").asDouble(),
						row.get("p50_us").asLong(), row.get("p99_us").asLong(), row.get("cpu_us_per_room").asLong(),
						row.get("thread_cpu_us_per_room").asLong(),
						row.get("alloc_bytes_per_room").asLong(), Sizes.bytes(row.get("heap_peak_bytes").asLong()),
						Sizes.bytes(row.get("direct_peak_bytes").asLong()),
						Sizes.bytes(row.get("transport_pool_bytes").asLong())));
			}
		}
		if (r.has("ucx")) {
			for (JsonNode ucx : r.get("ucx")) {
				sb.append(String.format(Locale.ROOT, "  UCX_TLS=%s: %s%n", ucx.get("tls").asText(),
						ucx.has("transport") ? ucx.get("transport").asText() : ""));
				rowLines(sb, ucx);
			}
		}
		if (r.has("ucx_missing")) {
			sb.append("  UCX rows not measured: ").append(r.get("ucx_missing").asText()).append(String.format("%n"));
		}
		if (r.has("noisy") && !r.get("noisy").isEmpty()) {
			List<String> noisy = new ArrayList<>();
			r.get("noisy").forEach(n -> noisy.add(n.asText()));
			sb.append(String.format(Locale.ROOT, "  noisy: %s (a baseline's rounds spread over %.2f of their median: "
					+ "the machine moved under the comparison; do not quote it, run again on a quieter machine)%n",
					String.join(", ", noisy), RoundSpread.NOISY));
		}
		sb.append("  result: ").append(ok ? "OK, every byte matched" : "FAILED");
		return sb.toString();
	}

	/** The lines of one row (TCP's, or a UCX row): whichever of bulk, small rooms, many and tiny pages it measured. */
	private static void rowLines(StringBuilder sb, JsonNode r) {
		if (r.has("bulk")) {
			bulkLines(sb, r.get("bulk"));
		}
		for (String key : new String[] { "small", "small_8" }) {
			if (r.has(key)) {
				var s = r.get(key);
				sb.append(String.format(Locale.ROOT, "  %-28s %11.0f us %11.0f us %8.2f   (TCP ping-pong)%n",
						"small " + s.get("pages").asInt() + " page(s) p50 (" + Sizes.bytes(s.get("bytes").asLong())
								+ ")", s.get("p50_us").asDouble(), s.get("baseline_p50_us").asDouble(),
						s.get("ratio").asDouble()));
				spreadLine(sb, s.get("ratio_spread"));
				sb.append(String.format(Locale.ROOT,
						"  %-28s %11.0f us %11.0f us %8.2f   (event-loop ping-pong, %.2f of TCP's)%n",
						"  until decode completed", s.get("decode_p50_us").asDouble(),
						s.get("loop_baseline_p50_us").asDouble(), s.get("decode_ratio_to_loop").asDouble(),
						s.get("loop_ratio").asDouble()));
				spreadLine(sb, s.get("decode_ratio_to_loop_spread"));
				if (s.has("loop_verdict_p50_us")) {
					sb.append(String.format(Locale.ROOT,
							"  %-28s %11.0f us %11.0f us %8.2f   (event-loop ping-pong with a verdict)%n",
							"  until both completed", s.get("p50_us").asDouble(),
							s.get("loop_verdict_p50_us").asDouble(), s.get("ratio_to_loop_verdict").asDouble()));
					spreadLine(sb, s.get("ratio_to_loop_verdict_spread"));
				}
			}
		}
		if (r.has("many")) {
			manyLine(sb, r.get("many"));
		}
		if (r.has("tiny_pages")) {
			tinyLines(sb, r.get("tiny_pages"));
		}
	}

	/** The line under a comparison that says how its rounds agreed (nothing for a result without the spread). */
	private static void spreadLine(StringBuilder sb, JsonNode spread) {
		if (spread == null || spread.isNull()) {
			return;
		}
		sb.append(String.format(Locale.ROOT, "  %-28s ratio per round %.2f (%.2f-%.2f over %d); spread kvferry %.2f, "
				+ "baseline %.2f%s%n", "", spread.get("ratio_median").asDouble(), spread.get("ratio_min").asDouble(),
				spread.get("ratio_max").asDouble(), spread.get("rounds").asInt(), spread.get("kvferry_spread").asDouble(),
				spread.get("baseline_spread").asDouble(), spread.get("noisy").asBoolean() ? "  NOISY" : ""));
	}

	private static void bulkLines(StringBuilder sb, JsonNode bulk) {
		String bulkName = "bulk " + Sizes.bytes(bulk.get("bytes").asLong()) + " 1<->1 x" + bulk.get("stripes").asInt();
		sb.append(String.format(Locale.ROOT, "  %-28s %9.2f GB/s %9.2f GB/s %8.2f   (TCP pump, medians of %d; "
				+ "best %.2f vs %.2f)%n", bulkName, bulk.get("gbps").asDouble(), bulk.get("baseline_gbps").asDouble(),
				bulk.get("ratio").asDouble(), bulk.get("rounds").asInt(), bulk.get("best_gbps").asDouble(),
				bulk.get("baseline_best_gbps").asDouble()));
		spreadLine(sb, bulk.get("ratio_spread"));
		if (bulk.get("baseline2_gbps").isNull()) {
			sb.append(String.format(Locale.ROOT, "  %-28s %s%n", "", bulk.get("baseline2_missing").asText()));
		}
		else {
			sb.append(String.format(Locale.ROOT, "  %-28s %14s %9.2f GB/s %8.2f   (2 connections + SO_RCVLOWAT)%n",
					"", "", bulk.get("baseline2_gbps").asDouble(), bulk.get("ratio2").asDouble()));
			spreadLine(sb, bulk.get("ratio2_spread"));
		}
		sb.append(String.format(Locale.ROOT, "  %-28s %14s %9.2f GB/s %8.2f   (cache-hot 1 MiB ring: the wire)%n",
				"", "", bulk.get("wire_gbps").asDouble(), bulk.get("wire_ratio").asDouble()));
	}

	private static void tinyLines(StringBuilder sb, JsonNode tiny) {
		for (JsonNode t : new JsonNode[] { tiny, tiny.get("tp2") }) {
			int ranks = t.get("ranks").asInt();
			sb.append(String.format(Locale.ROOT, "  %-28s %9.2f GB/s %9.2f GB/s %8.2f   (gather/scatter pump: the "
					+ "same pieces, %d connection(s))%n", "tiny pages " + t.get("rooms").asInt() + " rooms " + ranks
					+ "<->" + ranks, t.get("gbps").asDouble(), t.get("pump_gbps").asDouble(),
					t.get("ratio_to_pump").asDouble(), ranks));
			sb.append(String.format(Locale.ROOT, "  %-28s page size 1, %d tokens, %,d pieces; kvferry %.2f-%.2f, pump "
					+ "%.2f-%.2f GB/s over %d rounds%s%n", "", t.get("tokens").asInt(), t.get("pieces").asInt(),
					t.get("gbps_min").asDouble(), t.get("gbps_max").asDouble(), t.get("pump_gbps_min").asDouble(),
					t.get("pump_gbps_max").asDouble(), t.get("rounds").asInt(), t.get("ratio_to_bulk").isNull() ? ""
							: String.format(Locale.ROOT, "; %.2f of bulk", t.get("ratio_to_bulk").asDouble())));
			spreadLine(sb, t.get("ratio_to_pump_spread"));
			if (t.has("loop_verdict_gbps")) {
				sb.append(String.format(Locale.ROOT, "  %-28s %9.2f GB/s %9.2f GB/s %8.2f   (event-loop room pump: "
						+ "%.2f of the gather/scatter pump)%n", "", t.get("gbps").asDouble(),
						t.get("loop_verdict_gbps").asDouble(), t.get("ratio_to_loop_verdict").asDouble(),
						t.get("loop_verdict_ratio").asDouble()));
				spreadLine(sb, t.get("ratio_to_loop_verdict_spread"));
			}
		}
		sb.append(String.format(Locale.ROOT, "  %-28s %d failures%n", "", tiny.get("failures").asInt()));
	}

	private static void manyLine(StringBuilder sb, JsonNode many) {
		sb.append(String.format(Locale.ROOT, "  %-28s %9.2f GB/s %9.2f GB/s %8.2f   (frame pump: the same frames, "
				+ "2 connections)%n", "many " + many.get("rooms").asInt() + " rooms 2<->2", many.get("gbps").asDouble(),
				many.get("baseline_gbps").asDouble(), many.get("ratio").asDouble()));
		sb.append(String.format(Locale.ROOT, "  %-28s %d rooms/s, %d frames, %d failures, %.2f s, %.1f cores busy%n", "",
				many.get("rooms_per_second").asLong(), many.get("frames").asInt(), many.get("failures").asInt(),
				many.get("seconds").asDouble(), many.get("cpu_cores").asDouble()));
		spreadLine(sb, many.get("ratio_spread"));
		if (many.has("loop_verdict_gbps")) {
			sb.append(String.format(Locale.ROOT, "  %-28s %9.2f GB/s %9.2f GB/s %8.2f   (event-loop room pump on the rooms' "
					+ "pages: %.2f of the frame pump; %.2f GB/s on its buffers)%n", "", many.get("gbps").asDouble(),
					many.get("loop_verdict_gbps").asDouble(), many.get("ratio_to_loop_verdict").asDouble(),
					many.get("loop_verdict_ratio").asDouble(), many.get("loop_verdict_laid_out_gbps").asDouble()));
			spreadLine(sb, many.get("ratio_to_loop_verdict_spread"));
		}
	}
}
