package io.kvferry.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.KVFerryException;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.IoMode;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import reactor.core.publisher.Mono;

/**
 * {@code kvferry bench}: kvferry on loopback against baselines the benchmark runs itself in the same JVM with the same
 * bytes: bulk throughput versus a blocking NIO socket pump, small-request latency versus a TCP ping-pong,
 * 1,000 concurrent rooms across 2↔2 ranks, and heap bytes allocated per MB moved; then the same scenarios (but same
 * host and scaling) over UCX. The scenarios are classes of their own ({@link BulkBench}, {@link ManyBench},
 * {@link TinyPagesBench}, ...), run row by row on each row's transports.
 */
@Command(name = "bench", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Measures kvferry on loopback against baselines it runs itself, in the same JVM, with the same bytes.",
				"",
				"  bulk   one large room 1<->1 vs a plain TCP pump (blocking NIO, one connection, 1 MiB writes from "
						+ "a written direct source into direct memory), a two-connection SO_RCVLOWAT pump and the "
						+ "cache-hot 1 MiB ring (the wire's ceiling); --bulk-warmup rooms, then --rounds interleaved "
						+ "rounds: medians, best-of beside",
				"  small  1-page and 8-page rooms' p50 latency vs a TCP ping-pong of the same bytes, after "
						+ "--small-warmup seconds of warm-up, a room and a round trip in turn",
				"  many   --many-rooms concurrent rooms across prefill TP2 <-> decode TP2 (4-layer shape, 1-4 pages): "
						+ "the same batch untimed for --many-warmup seconds (2 batches at least), then --rounds timed "
						+ "batches (median, best beside, and the cores busy meanwhile); sources written before the clock "
						+ "starts, every byte checked after it stops; vs the frame pump (the batch's own frames, a "
						+ "16-byte header each, over 2 connections, read 128 KiB at a time and copied out) and the "
						+ "event-loop room pump (the same frames between event loops, a request and a verdict per room "
						+ "and rank pair, over the pump's buffers and from and to the rooms' own pages), in turn",
				"  tiny pages  page size 1 (a page per token and layer buffer), --tiny-rooms concurrent rooms of up to "
						+ "--tiny-tokens tokens, slots scattered in short runs, 1<->1 and 2<->2, vs a pump that gathers "
						+ "and scatters the same pieces over plain connections and the event-loop room pump of many "
						+ "(a frame per piece), in turn; every byte checked",
				"  alloc  heap bytes allocated (all threads) per MB moved during the timed bulk rooms' transfers "
						+ "(not their staging or checking)",
				"  same host  a bulk-sized room 1<->1 through shared memory vs a single-thread memcpy of its bytes "
						+ "(and over TCP), in turn",
				"  scaling (--scaling)  concurrent rooms, room size and ranks: rooms/s, GB/s, p50/p99, CPU, memory",
				"  ucx    the bulk room, 1-page rooms, the many test and page size 1 again over UCX, a row per --ucx-tls "
						+ "(shared memory by default: decode reads one-sided), each against its own baseline, in the "
						+ "same run (--transport: which rows)",
				"With --tracing it measures only what room tracing costs: rooms per second and heap bytes per room, "
						+ "tracing off vs on (OpenTelemetry SDK, batch span processor), in alternating rounds.",
				"With --small-under-bulk it measures only 1-page rooms' p50 latency while a --bulk-mib room is in "
						+ "flight between the same ranks, vs alone.",
				"With --optimistic it measures only what optimistic prefill saves when decode asks 50 ms late and the "
						+ "engine computes for 50 ms: p50 room time, waiting for the request vs sending at once.",
				"Every room's bytes are verified. Figures depend on the machine: compare ratios, not absolutes.",
				"" },
		footer = { "", "Exit status: 0 measured and every byte matched; 1 a room failed; 2 bad usage; "
				+ "3 could not run." })
final class BenchCommand implements Callable<Integer> {

	static final ObjectMapper JSON = new ObjectMapper();
	static final Duration START_TIMEOUT = Duration.ofSeconds(60);
	private static final int MANY_LAYERS = 4;
	private static final Duration HEARTBEAT = Duration.ofSeconds(5);

	@Spec
	CommandSpec spec;

	@Option(names = "--bulk-mib", defaultValue = "256", paramLabel = "MIB",
			description = "Size of the bulk room (default: ${DEFAULT-VALUE}).")
	int bulkMib;

	@Option(names = "--rounds", defaultValue = "9", paramLabel = "N",
			description = "Timed bulk rounds of each side, interleaved; medians count, best-of is shown beside "
					+ "(default: ${DEFAULT-VALUE}).")
	int rounds;

	// Striped rooms run per-piece and per-stripe code that C2 had not finished with after 60 rooms: with 2 stripes
	// the median after 60 was barely above one connection's, after 200 about 1.4x.
	@Option(names = "--bulk-warmup", defaultValue = "200", paramLabel = "ROOMS",
			description = "Bulk rooms (and pump rounds) before the timed ones, so that the JIT has compiled the data "
					+ "path (default: ${DEFAULT-VALUE}).")
	int bulkWarmup;

	@Option(names = "--scaling", paramLabel = "MODE", arity = "0..1", fallbackValue = "quick",
			description = "Also measure how costs grow with concurrent rooms (1 .. 10,000), room size (64 KiB .. "
					+ "256 MiB, or 1 GiB with full) and ranks (1<->1, 2<->2, 4<->4): quick (default when given) or "
					+ "full.")
	String scaling;

	@Option(names = "--small-iterations", defaultValue = "200", paramLabel = "N",
			description = "Timed small rooms (and ping-pongs) of each size (default: ${DEFAULT-VALUE}).")
	int smallIterations;

	@Option(names = "--small-warmup", defaultValue = "5", paramLabel = "SECONDS",
			description = "Untimed small rooms of each size for this long (20 at least) before the timed ones "
					+ "(default: ${DEFAULT-VALUE}).")
	int smallWarmupSeconds;

	@Option(names = "--same-host-warmup", defaultValue = "3s", paramLabel = "DURATION",
			description = "Untimed same host rooms of each pair (shared memory, TCP) for this long (10 at least) "
					+ "before the timed rounds (default: ${DEFAULT-VALUE}).")
	Duration sameHostWarmup;

	@Option(names = "--many-rooms", defaultValue = "1000", paramLabel = "N",
			description = "Concurrent rooms of the many test (default: ${DEFAULT-VALUE}).")
	int manyRooms;

	// A batch of a thousand rooms runs every per-room path at once: batch times swung 2x for about 12 s, C2
	// recompiling and the heap, the pools and the registered pages being touched for the first time, then settled.
	@Option(names = "--many-warmup", defaultValue = "15", paramLabel = "SECONDS",
			description = "Untimed many batches for this long (2 at least; the pumps' turns between them not "
					+ "counted) before the timed ones (default: ${DEFAULT-VALUE}).")
	int manyWarmupSeconds;

	@Option(names = "--tracing", description = "Measure only the cost of room tracing: --tracing-rooms 1-page rooms "
			+ "(16 concurrent) per round, tracing off and on in turn, --rounds rounds each after a warm-up round.")
	boolean tracing;

	@Option(names = "--small-under-bulk", description = "Measure only how long 1-page rooms take while a --bulk-mib "
			+ "room is in flight between the same two ranks, vs alone: --rounds rounds after a warm-up round.")
	boolean smallUnderBulk;

	@Option(names = "--io-compare", description = "Measure only epoll against io_uring, in one run: the bulk room "
			+ "(--bulk-warmup rooms each, then --rounds rounds of one room on each, in turn), then 1-page rooms, the many "
			+ "test and the tiny pages test on each, each against its own baseline.")
	boolean ioCompare;

	@Option(names = "--optimistic", description = "Measure only what optimistic prefill saves on a room whose decode "
			+ "bootstraps late: --rounds rounds, the engine waiting for decode's request vs sending at once, in turn.")
	boolean optimistic;

	@Option(names = "--tracing-rooms", defaultValue = "2000", paramLabel = "N",
			description = "Rooms per round of the tracing comparison (default: ${DEFAULT-VALUE}).")
	int tracingRooms;

	@Option(names = "--bulk-only", description = "Measure only the bulk room against its baselines (no small, many, "
			+ "same host or scaling figures): for comparing settings such as --stripes run after run.")
	boolean bulkOnly;

	@Option(names = "--many-only", description = "Measure only the many test (no bulk, small, same host or scaling "
			+ "figures, so no ratio to bulk): for profiling or comparing settings on many rooms.")
	boolean manyOnly;

	@Option(names = "--transport", paramLabel = "tcp,ucx", split = ",", defaultValue = "tcp,ucx",
			description = "The rows of the table: tcp (kvferry's TCP transport, with the same host and scaling rows), "
					+ "ucx (a row per --ucx-tls) or both, measured in the same run (default: ${DEFAULT-VALUE}; the ucx "
					+ "rows are skipped, saying why, where UCX is not installed, unless ucx is named).")
	List<String> transports;

	@Option(names = "--ucx-tls", paramLabel = "LIST", defaultValue = UcxTransports.SHARED_MEMORY,
			description = "The transports (UCX_TLS) of a ucx row: the bulk room, 1-page rooms, the many test and page "
					+ "size 1 over UCX, each against its own baseline; repeat for more rows (default: "
					+ "${DEFAULT-VALUE}: shared memory, where decode reads one-sided; tcp: active messages).")
	List<String> ucxTls;

	@Mixin
	TinyPagesOptions tiny;

	@Mixin
	IoOptions io;

	@Mixin
	ModelOptions model;

	@Mixin
	StripeOptions stripes;

	@Option(names = "--json", description = "Print the figures as one JSON object on stdout: bulk {gbps, "
			+ "baseline_gbps, ratio, baseline2_gbps, ratio2, wire_gbps, wire_ratio, ...}, small {p50_us, "
			+ "decode_p50_us, baseline_p50_us, loop_baseline_p50_us, loop_verdict_p50_us, ratio, decode_ratio, "
			+ "loop_ratio, decode_ratio_to_loop, ratio_to_loop_verdict}, small_8 {...}, many {rooms, gbps, "
			+ "baseline_gbps, ratio, loop_verdict_gbps, loop_verdict_laid_out_gbps, loop_verdict_ratio, "
			+ "ratio_to_loop_verdict, failures, ratio_to_bulk, cpu_cores, ...}, tiny_pages {gbps, ratio_to_bulk, ratio_to_pump, pump_gbps, loop_verdict_gbps, "
			+ "loop_verdict_ratio, ratio_to_loop_verdict, rooms, "
			+ "pieces, failures, ..., tp2 {...}}, same_host {gbps, memcpy_gbps, ratio}, alloc_bytes_per_mb, "
			+ "scaling [...] (with --scaling), ucx [{tls, transport, bulk, small, many, tiny_pages, "
			+ "alloc_bytes_per_mb}] (ucx_missing where UCX is not installed), tcp_congestion_control, noisy [paths], "
			+ "verified. Every ratio R has R_spread {rounds, ratio_median, ratio_min, ratio_max, kvferry_spread, "
			+ "baseline_spread, noisy}: its interleaved rounds' own ratios; noisy lists the comparisons whose "
			+ "baseline moved by over 0.25 of its median.")
	boolean json;

	@Mixin
	LoggingOptions logging;

	private final List<String> failures = new ArrayList<>();
	// The TCP row's I/O mode, after any fall-back; why the UCX rows are missing, where they are.
	private IoMode ioRan;
	private String ucxMissing;

	@Override
	public Integer call() throws IOException {
		CommandLine cl = spec.commandLine();
		ModelOptions.positive(cl, "--bulk-mib", bulkMib);
		ModelOptions.positive(cl, "--rounds", rounds);
		ModelOptions.positive(cl, "--small-iterations", smallIterations);
		ModelOptions.positive(cl, "--many-rooms", manyRooms);
		if (manyWarmupSeconds < 0) {
			throw new CommandLine.ParameterException(cl, "--many-warmup : " + manyWarmupSeconds + " (expected: >= 0)");
		}
		if (smallWarmupSeconds < 0) {
			throw new CommandLine.ParameterException(cl, "--small-warmup : " + smallWarmupSeconds + " (expected: >= 0)");
		}
		if (bulkWarmup < 0) {
			throw new CommandLine.ParameterException(cl, "--bulk-warmup : " + bulkWarmup + " (expected: >= 0)");
		}
		if (scaling != null && !scaling.equals("quick") && !scaling.equals("full")) {
			throw new CommandLine.ParameterException(cl, "--scaling : " + scaling + " (expected: quick or full)");
		}
		stripes.validate(cl);
		tiny.validate(cl);
		io.validate(cl);
		ModelShape shape = model.shape(cl);
		if (tracing) {
			ModelOptions.positive(cl, "--tracing-rooms", tracingRooms);
			return TracingBench.run(shape, tracingRooms, rounds, json, cl.getOut(), cl.getErr());
		}
		if (optimistic) {
			return OptimisticBench.run(shape, rounds, json, cl.getOut(), cl.getErr());
		}
		long pageBytes = DirectMemory.instanceBytes(shape, 1, 1, 1, 1);
		int bulkPages = (int) Math.max(8, ((long) bulkMib << 20) / pageBytes);
		long bulkBytes = bulkPages * pageBytes;
		if (bulkBytes > Integer.MAX_VALUE) {
			throw new CommandLine.ParameterException(cl, "--bulk-mib : " + bulkMib + " (expected: at most 2047)");
		}
		DirectMemory.check(cl, 4 * bulkBytes, "lower --bulk-mib");
		if (smallUnderBulk) {
			return SmallUnderBulkBench.run(shape, bulkPages, bulkBytes, rounds, stripes, json, cl.getOut(), cl.getErr());
		}
		if (ioCompare) {
			return IoCompareBench.run(shape, bulkPages, bulkBytes, rounds, bulkWarmup, smallIterations,
					Duration.ofSeconds(smallWarmupSeconds), stripes, List.of(
					new IoCompareBench.Scenario("many", "ratio", (p, d, c) -> many(shape, p, d, c)),
					new IoCompareBench.Scenario("tiny_pages", "ratio_to_pump", (p, d, c) -> tinyPages(shape, p, d, c,
							null, ""))), json, cl.getOut());
		}
		if (bulkOnly && manyOnly) {
			throw new CommandLine.ParameterException(cl, "--bulk-only and --many-only exclude each other");
		}
		if (tiny.only && (bulkOnly || manyOnly)) {
			throw new CommandLine.ParameterException(cl, "--tiny-only excludes --bulk-only and --many-only");
		}
		List<String> ucxRows = ucxRows(cl);
		ObjectNode result = JSON.createObjectNode();
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		try {
			if (transports.contains(TransportOptions.TCP)) {
				row(new NettyTransports(false, io), result, shape, bulkPages, bulkBytes, client, server, "");
			}
			for (String tls : ucxRows) {
				ObjectNode row = result.withArray("ucx").addObject();
				row.put("tls", tls);
				row(new UcxTransports(tls), row, shape, bulkPages, bulkBytes, client, server, "UCX " + tls + ": ");
			}
		}
		finally {
			client.dispose();
			server.disposeNow();
		}
		return finish(cl, result, shape);
	}

	/**
	 * Checks {@code --transport} and {@code --ucx-tls}.
	 *
	 * @return the UCX_TLS values of the UCX rows: none without ucx among the transports, or where UCX cannot run here
	 *         and ucx was not asked for by name (the reason goes into the output instead)
	 * @throws KVFerryException where ucx was asked for by name and UCX cannot run here
	 */
	private List<String> ucxRows(CommandLine cl) {
		if (transports.isEmpty() || !List.of(TransportOptions.TCP, TransportOptions.UCX).containsAll(transports)) {
			throw new CommandLine.ParameterException(cl, "--transport : " + String.join(",", transports)
					+ " (expected: tcp, ucx or tcp,ucx; shared memory has the same host row)");
		}
		for (String tls : ucxTls) {
			if (tls.isBlank()) {
				throw new CommandLine.ParameterException(cl, "--ucx-tls : '" + tls + "' (expected: a UCX_TLS list "
						+ "such as tcp or posix,cma,self)");
			}
		}
		if (!transports.contains(TransportOptions.UCX)) {
			return List.of();
		}
		ucxMissing = UcxTransports.unavailable();
		if (ucxMissing != null) {
			if (cl.getParseResult().hasMatchedOption("--transport")) {
				throw new KVFerryException("--transport ucx: " + ucxMissing + "; or run with --transport tcp");
			}
			return List.of();
		}
		return ucxTls.stream().map(String::trim).toList();
	}

	/**
	 * Runs the scenarios of one row of the table on two transports of {@code kind} (prefill's, and decode's of its
	 * own, as in two processes).
	 *
	 * @param name how progress lines name the row (empty for the TCP row)
	 */
	private void row(TransportKind kind, ObjectNode row, ModelShape shape, int bulkPages, long bulkBytes,
			ReactorBootstrapClient client, DisposableBootstrapServer server, String name) throws IOException {
		boolean tcp = kind instanceof NettyTransports;
		KVTransport transport = kind.create(HEARTBEAT);
		KVTransport decodeTransport = kind.create(HEARTBEAT);
		BenchScenario.Run run = new BenchScenario.Run(shape, transport, decodeTransport, client, server.address());
		try {
			for (BenchScenario scenario : scenarios(tcp, bulkPages, bulkBytes, name)) {
				scenario.run(run, row);
			}
			if (tcp) {
				// The mode the loops ran, after any fall-back.
				ioRan = ((NettyKVTransport) decodeTransport).ioMode();
			}
			else {
				row.put("transport", kind.describe(decodeTransport));
			}
		}
		finally {
			kind.dispose(transport);
			kind.dispose(decodeTransport);
		}
	}

	/**
	 * The table of one row's scenarios, in the order they run: the bulk room with the small rooms on its ranks, the
	 * many test and page size 1 in every row (as far as the {@code --*-only} options leave them); the same host room
	 * and the scaling sweep in the TCP row only (the first is kvferry's own shared memory, the second a sweep of
	 * kvferry's engine that the transport does not change).
	 */
	private List<BenchScenario> scenarios(boolean tcp, int bulkPages, long bulkBytes, String name) {
		PrintWriter err = spec.commandLine().getErr();
		boolean everything = !bulkOnly && !manyOnly && !tiny.only;
		List<BenchScenario> table = new ArrayList<>();
		if (!manyOnly && !tiny.only) {
			int[] small = bulkOnly ? new int[0] : tcp ? new int[] { 1, 8 } : new int[] { 1 };
			table.add(announced(name + "bulk: " + Sizes.bytes(bulkBytes) + " 1<->1 over " + stripes.stripes
					+ " stripe(s), " + rounds + " rounds each", new BulkBench(bulkPages, bulkBytes, rounds, bulkWarmup,
							smallIterations, Duration.ofSeconds(smallWarmupSeconds), small, stripes, failures)));
		}
		if (!bulkOnly && !tiny.only) {
			table.add(announced(name + "many: " + manyRooms + " concurrent rooms, prefill TP2 <-> decode TP2",
					this::many));
		}
		if (!bulkOnly && !manyOnly) {
			// Page size 1 tells its own steps.
			table.add((run, row) -> tinyPages(run, row, name));
		}
		if (tcp && everything) {
			table.add(announced("same host: " + Sizes.bytes(bulkBytes) + " rooms 1<->1 through shared memory, a "
					+ "memcpy and over TCP, in turn", (run, row) -> row.set("same_host", sameHost(run.shape(),
							bulkBytes, err))));
		}
		if (tcp && everything && scaling != null) {
			table.add(this::scaling);
		}
		return table;
	}

	/** @return {@code scenario}, telling {@code what} it measures as it starts */
	private BenchScenario announced(String what, BenchScenario scenario) {
		return (run, row) -> {
			progress(spec.commandLine().getErr(), what);
			scenario.run(run, row);
		};
	}

	/** The scaling sweep over the row's transports, under {@code scaling}. */
	private void scaling(BenchScenario.Run run, ObjectNode row) {
		PrintWriter err = spec.commandLine().getErr();
		ScalingBench sweep = new ScalingBench(run.shape(), run.prefill(), run.decode(), run.client(),
				scaling.equals("quick"), what -> progress(err, what));
		row.set("scaling", sweep.run());
		if (sweep.firstFailure() != null) {
			failures.add(sweep.failures() + " scaling room(s) failed, first: " + sweep.firstFailure());
		}
	}

	/** Prints the figures; returns the exit status. */
	private int finish(CommandLine cl, ObjectNode result, ModelShape shape) {
		PrintWriter err = cl.getErr();
		result.put("io", (ioRan == null ? io.mode() : ioRan).label());
		result.put("tcp_congestion_control", TcpBaseline.congestionControl());
		if (ucxMissing != null) {
			result.put("ucx_missing", ucxMissing);
		}
		result.put("verified", failures.isEmpty());
		List<String> noisy = RoundSpread.noisy(result);
		noisy.forEach(result.putArray("noisy")::add);
		PrintWriter out = cl.getOut();
		out.println(json ? result.toString() : BenchTable.render(result, shape, failures.isEmpty()));
		out.flush();
		failures.forEach(f -> err.println("kvferry bench: failed: " + f));
		err.flush();
		return failures.isEmpty() ? 0 : 1;
	}

	private void progress(PrintWriter err, String what) {
		if (!json || System.console() != null) {
			err.println("kvferry bench: " + what + " ...");
			err.flush();
		}
	}

	/**
	 * The same-host path against a single-thread memcpy of the same bytes (see {@link SameHostBench}); gbps and ratio
	 * are null, with the reason, when the rooms could not go through shared memory here.
	 */
	private ObjectNode sameHost(ModelShape shape, long bytes, PrintWriter err) {
		try {
			return SameHostBench.run(shape, bytes, rounds, sameHostWarmup, json && System.console() == null ? null
					: err).json();
		}
		catch (IOException e) {
			failures.add("same host: " + e.getMessage());
			ObjectNode o = JSON.createObjectNode();
			o.putNull("gbps");
			o.putNull("memcpy_gbps");
			o.putNull("ratio");
			return o;
		}
	}

	/**
	 * The tiny_pages figures, {@code ratio_to_bulk} among them when the row measured bulk (null without).
	 *
	 * @param name how progress lines name the row
	 */
	private void tinyPages(BenchScenario.Run run, ObjectNode row, String name) throws IOException {
		Double bulkGbps = row.has("bulk") ? row.get("bulk").get("gbps").asDouble() : null;
		row.set("tiny_pages", tinyPages(run.shape(), run.prefill(), run.decode(), run.client(), bulkGbps, name));
	}

	/**
	 * @param bulkGbps the bulk room's throughput in this row, or null when bulk was not measured
	 * @return the tiny_pages figures, {@code ratio_to_bulk} among them (null without)
	 */
	private ObjectNode tinyPages(ModelShape shape, KVTransport transport, KVTransport decodeTransport,
			ReactorBootstrapClient client, Double bulkGbps, String name) throws IOException {
		PrintWriter err = spec.commandLine().getErr();
		ObjectNode o = new TinyPagesBench(spec.commandLine(), tiny, stripes, failures, what -> progress(err,
				name + what))
				.run(shape, transport, decodeTransport, client);
		for (ObjectNode layout : new ObjectNode[] { o, (ObjectNode) o.get("tp2") }) {
			if (bulkGbps == null || bulkGbps == 0) {
				layout.putNull("ratio_to_bulk");
			}
			else {
				layout.put("ratio_to_bulk", round(layout.get("gbps").asDouble() / bulkGbps));
			}
		}
		return o;
	}

	/** The many test's figures, on the model's first layers, with its ratio to the row's bulk room when it had one. */
	private void many(BenchScenario.Run run, ObjectNode row) throws IOException {
		ObjectNode many = many(run.shape(), run.prefill(), run.decode(), run.client());
		if (row.has("bulk")) {
			double bulkGbps = row.get("bulk").get("gbps").asDouble();
			many.put("ratio_to_bulk", bulkGbps == 0 ? 0 : round(many.get("gbps").asDouble() / bulkGbps));
		}
		row.set("many", many);
	}

	/** @return the many test's figures, on the model's first layers */
	private ObjectNode many(ModelShape shape, KVTransport transport, KVTransport decodeTransport,
			ReactorBootstrapClient client) throws IOException {
		return new ManyBench(spec.commandLine(), manyRooms, rounds, manyWarmupSeconds, stripes, failures)
				.run(shape.withLayers(Math.min(MANY_LAYERS, shape.layers())), transport, decodeTransport, client);
	}

	/**
	 * Closes a scenario's ranks. A close that fails or outlasts {@link Closing#TIMEOUT} is told in {@code failures}, so
	 * the run still prints what the scenario measured and then exits non-zero, instead of ending with no figures.
	 *
	 * @param what the scenario and its transport, for the message
	 */
	static void close(Mono<Void> close, String what, List<String> failures) {
		try {
			Closing.await(close, Closing.TIMEOUT, "the ranks");
		}
		catch (RuntimeException e) {
			failures.add(what + ": closing its ranks failed: " + e.getMessage());
		}
	}

	/** Tells a failed room (the first ten) in {@code failures}; returns the result. */
	static RoomResult check(List<String> failures, RoomResult r) {
		if (!r.ok() && failures.size() < 10) {
			failures.add("room " + r.room() + ": " + r.failure());
		}
		return r;
	}

	/** @return heap bytes allocated so far by every live thread (HotSpot's per-thread counters) */
	static long allocatedBytes() {
		java.lang.management.ThreadMXBean bean = ManagementFactory.getThreadMXBean();
		if (!(bean instanceof com.sun.management.ThreadMXBean sun) || !sun.isThreadAllocatedMemorySupported()) {
			return 0;
		}
		long sum = 0;
		for (long n : sun.getThreadAllocatedBytes(bean.getAllThreadIds())) {
			if (n > 0) {
				sum += n;
			}
		}
		return sum;
	}

	static double round(double v) {
		return Math.round(v * 1000) / 1000.0;
	}
}