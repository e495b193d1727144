package io.kvferry.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import reactor.core.scheduler.Schedulers;

/**
 * {@code kvferry bench}: kvferry on loopback against baselines the benchmark runs itself in the same JVM with the same
 * bytes: bulk throughput versus a blocking NIO socket pump, small-request latency versus a TCP ping-pong,
 * 1,000 concurrent rooms across 2↔2 ranks, and heap bytes allocated per MB moved.
 */
@Command(name = "bench", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Measures kvferry on loopback against baselines it runs itself, in the same JVM, with the same bytes.",
				"",
				"  bulk   one large room 1<->1 vs a plain TCP pump (blocking NIO, one connection, 1 MiB writes from "
						+ "a written direct source into direct memory), a two-connection SO_RCVLOWAT pump and the "
						+ "cache-hot 1 MiB ring (the wire's ceiling); --bulk-warmup rooms, then --rounds interleaved "
						+ "rounds: medians, best-of beside",
				"  small  1-page and 8-page rooms' p50 latency vs a TCP ping-pong of the same bytes, after 5 s of "
						+ "warm-up, a room and a round trip in turn",
				"  many   --many-rooms concurrent rooms across prefill TP2 <-> decode TP2 (4-layer shape, 1-4 pages): "
						+ "the same batch untimed for --many-warmup seconds (2 batches at least), then --rounds timed "
						+ "batches (median, best beside, and the cores busy meanwhile); sources written before the clock "
						+ "starts, every byte checked after it stops; vs the frame pump (the batch's own frames, a "
						+ "16-byte header each, over 2 connections, read 128 KiB at a time and copied out), in turn",
				"  tiny pages  page size 1 (a page per token and layer buffer), --tiny-rooms concurrent rooms of up to "
						+ "--tiny-tokens tokens, slots scattered in short runs, 1<->1 and 2<->2, vs a pump that gathers "
						+ "and scatters the same pieces over plain connections, in turn; every byte checked",
				"  alloc  heap bytes allocated (all threads) per MB moved during the timed bulk rooms",
				"  same host  a bulk-sized room 1<->1 through shared memory vs a single-thread memcpy of its bytes "
						+ "(and over TCP), in turn",
				"  scaling (--scaling)  concurrent rooms, room size and ranks: rooms/s, GB/s, p50/p99, CPU, memory",
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
	static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(10);
	private static final Duration SAME_HOST_WARMUP = Duration.ofSeconds(3);
	private static final int MANY_LAYERS = 4;

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

	@Option(names = "--many-rooms", defaultValue = "1000", paramLabel = "N",
			description = "Concurrent rooms of the many test (default: ${DEFAULT-VALUE}).")
	int manyRooms;

	// A batch of a thousand rooms runs every per-room path at once: batch times swung 2x for about 12 s, C2
	// recompiling and the heap, the pools and the registered pages being touched for the first time, then settled.
	@Option(names = "--many-warmup", defaultValue = "15", paramLabel = "SECONDS",
			description = "Untimed many batches for this long (2 at least) before the timed ones "
					+ "(default: ${DEFAULT-VALUE}).")
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
			+ "baseline_p50_us, ratio}, small_8 {...}, many {rooms, gbps, baseline_gbps, ratio, failures, "
			+ "ratio_to_bulk, cpu_cores, ...}, tiny_pages {gbps, ratio_to_bulk, ratio_to_pump, pump_gbps, rooms, "
			+ "pieces, failures, ..., tp2 {...}}, same_host {gbps, memcpy_gbps, ratio}, alloc_bytes_per_mb, scaling [...] "
			+ "(with --scaling), verified.")
	boolean json;

	@Mixin
	LoggingOptions logging;

	private final List<String> failures = new ArrayList<>();
	private NettyKVTransport measured;

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
			return IoCompareBench.run(shape, bulkPages, bulkBytes, rounds, bulkWarmup, smallIterations, stripes, List.of(
					new IoCompareBench.Scenario("many", "ratio", (p, d, c) -> many(shape, p, d, c)),
					new IoCompareBench.Scenario("tiny_pages", "ratio_to_pump", (p, d, c) -> tinyPages(shape, p, d, c,
							null))), json, cl.getOut());
		}
		PrintWriter err = cl.getErr();

		if (bulkOnly && manyOnly) {
			throw new CommandLine.ParameterException(cl, "--bulk-only and --many-only exclude each other");
		}
		if (tiny.only && (bulkOnly || manyOnly)) {
			throw new CommandLine.ParameterException(cl, "--tiny-only excludes --bulk-only and --many-only");
		}
		ObjectNode result = JSON.createObjectNode();
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		// Prefill and decode each with their own event loops, as in two processes.
		NettyKVTransport transport = io.apply(NettyKVTransport.create());
		NettyKVTransport decodeTransport = io.apply(NettyKVTransport.create());
		measured = decodeTransport;
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		try {
			if (manyOnly) {
				progress(err, "many: " + manyRooms + " concurrent rooms, prefill TP2 <-> decode TP2");
				result.set("many", many(shape, transport, decodeTransport, client));
				return finish(cl, result, shape);
			}
			if (tiny.only) {
				result.set("tiny_pages", tinyPages(shape, transport, decodeTransport, client, null));
				return finish(cl, result, shape);
			}
			progress(err, "bulk: " + Sizes.bytes(bulkBytes) + " 1<->1 over " + stripes.stripes + " stripe(s), " + rounds
					+ " rounds each");
			KVCluster pair = KVCluster.builder().shape(shape).prefill(1, 1, 1).decode(1, 1)
					.capacity(bulkPages, 64).contiguous(true).transport(transport).decodeTransport(decodeTransport)
					// A room's latency ends where its last completion is signalled, as an engine polling poll() sees
					// it, not after a hop to a callback worker: the harness only stamps the time there.
					.customize(spec -> stripes.apply(spec.callbackScheduler(Schedulers.immediate())))
					.bootstrapClient(client)
					.bootstrapAddress(server.address()).startNow(START_TIMEOUT);
			try {
				bulk(pair, shape, bulkPages, bulkBytes, result);
				for (int pages : bulkOnly ? new int[0] : new int[] { 1, 8 }) {
					progress(err, "small: " + pages + "-page rooms, " + smallIterations + " each");
					result.set(pages == 1 ? "small" : "small_" + pages, SmallBench.run(pair, shape, pages, pageBytes,
							smallIterations, this::check));
				}
			}
			finally {
				pair.close().block(CLOSE_TIMEOUT);
			}
			if (bulkOnly) {
				return finish(cl, result, shape);
			}
			progress(err, "many: " + manyRooms + " concurrent rooms, prefill TP2 <-> decode TP2");
			ObjectNode many = many(shape, transport, decodeTransport, client);
			double bulkGbps = result.get("bulk").get("gbps").asDouble();
			many.put("ratio_to_bulk", bulkGbps == 0 ? 0 : round(many.get("gbps").asDouble() / bulkGbps));
			result.set("many", many);
			result.set("tiny_pages", tinyPages(shape, transport, decodeTransport, client, bulkGbps));
			progress(err, "same host: " + Sizes.bytes(bulkBytes) + " rooms 1<->1 through shared memory, a memcpy and "
					+ "over TCP, in turn");
			result.set("same_host", sameHost(shape, bulkBytes, err));
			if (scaling != null) {
				ScalingBench sweep = new ScalingBench(shape, transport, decodeTransport, client,
						scaling.equals("quick"), what -> progress(err, what));
				result.set("scaling", sweep.run());
				if (sweep.firstFailure() != null) {
					failures.add(sweep.failures() + " scaling room(s) failed, first: " + sweep.firstFailure());
				}
			}
		}
		finally {
			transport.dispose();
			decodeTransport.dispose();
			client.dispose();
			server.disposeNow();
		}
		return finish(cl, result, shape);
	}

	/** Prints the figures; returns the exit status. */
	private int finish(CommandLine cl, ObjectNode result, ModelShape shape) {
		PrintWriter err = cl.getErr();
		// The mode the loops run, after any fall-back.
		result.put("io", (measured == null ? io.mode() : measured.ioMode()).label());
		result.put("verified", failures.isEmpty());
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
	 * kvferry's bulk room against the pumps, in interleaved rounds after a warm-up of both: kvferry, the fair pump
	 * (one connection, a source written before each round as kvferry's pages are), the strongest simple pump (two
	 * connections, {@code SO_RCVLOWAT}) and the cache-hot ring (the loopback ceiling). Medians count; best-of is shown
	 * beside.
	 */
	private void bulk(KVCluster pair, ModelShape shape, int pages, long bytes, ObjectNode result) throws IOException {
		int tokens = pages * shape.pageSize();
		Random random = new Random(1);
		long room = 1_000_000;
		long[] kvferry = new long[rounds];
		long[] pump = new long[rounds];
		long[] pump2 = new long[rounds];
		long[] ring = new long[rounds];
		long moved = 0;
		long allocated = 0;
		String lowatMissing = RcvLowat.unavailable();
		// Freed right after, not at some later collection: the many test needs the memory.
		CleanableDirectBuffer src = PlatformDependent.allocateDirect((int) bytes);
		CleanableDirectBuffer dst = PlatformDependent.allocateDirect((int) bytes);
		CleanableDirectBuffer hotSrc = PlatformDependent.allocateDirect(TcpBaseline.WRITE_SIZE);
		CleanableDirectBuffer hotDst = PlatformDependent.allocateDirect(TcpBaseline.WRITE_SIZE);
		try (TcpBaseline tcp = TcpBaseline.open(); TcpBaseline second = TcpBaseline.open()) {
			TcpBaseline[] one = { tcp };
			TcpBaseline[] two = { tcp, second };
			TcpBaseline.fill(hotSrc.buffer(), 0);
			// Warm-up: the data path's code runs per frame, per piece and per room; C2 needs a hundred rooms or more.
			for (int i = 0; i < bulkWarmup; i++) {
				check(pair.run(room++, tokens, 1, random).block());
				if (i % 10 == 0) {
					TcpBaseline.fill(src.buffer(), room);
					tcp.pump(src.buffer(), dst.buffer());
					if (lowatMissing == null) {
						TcpBaseline.pump(two, src.buffer(), dst.buffer(), true);
					}
					tcp.ring(hotSrc.buffer(), hotDst.buffer(), bytes);
				}
			}
			// Rounds alternate between kvferry and the baselines, so that all meet the same machine.
			for (int i = 0; i < rounds; i++) {
				long before = allocatedBytes();
				RoomResult r = check(pair.run(room++, tokens, 1, random).block());
				allocated += allocatedBytes() - before;
				kvferry[i] = r.ok() ? r.latencyNanos() : Long.MAX_VALUE;
				moved += r.ok() ? r.bytes() : 0;
				TcpBaseline.fill(src.buffer(), room);
				pump[i] = TcpBaseline.pump(one, src.buffer(), dst.buffer(), false);
				if (lowatMissing == null) {
					TcpBaseline.fill(src.buffer(), room);
					pump2[i] = TcpBaseline.pump(two, src.buffer(), dst.buffer(), true);
				}
				ring[i] = tcp.ring(hotSrc.buffer(), hotDst.buffer(), bytes);
			}
		}
		finally {
			src.clean();
			dst.clean();
			hotSrc.clean();
			hotDst.clean();
		}
		double gbps = gbps(bytes, TcpBaseline.median(kvferry.clone()));
		double baseline = gbps(bytes, TcpBaseline.median(pump.clone()));
		double wire = gbps(bytes, TcpBaseline.median(ring.clone()));
		ObjectNode bulk = result.putObject("bulk");
		bulk.put("bytes", bytes);
		bulk.put("stripes", stripes.stripes);
		bulk.put("rounds", rounds);
		bulk.put("warmup_rooms", bulkWarmup);
		bulk.put("gbps", round(gbps));
		bulk.put("best_gbps", round(gbps(bytes, min(kvferry))));
		bulk.put("baseline_gbps", round(baseline));
		bulk.put("baseline_best_gbps", round(gbps(bytes, min(pump))));
		bulk.put("ratio", round(gbps / baseline));
		if (lowatMissing == null) {
			double baseline2 = gbps(bytes, TcpBaseline.median(pump2.clone()));
			bulk.put("baseline2_gbps", round(baseline2));
			bulk.put("baseline2_best_gbps", round(gbps(bytes, min(pump2))));
			bulk.put("ratio2", round(gbps / baseline2));
		}
		else {
			bulk.putNull("baseline2_gbps");
			bulk.putNull("ratio2");
			bulk.put("baseline2_missing", "two-stream SO_RCVLOWAT pump: " + lowatMissing);
		}
		bulk.put("wire_gbps", round(wire));
		bulk.put("wire_ratio", round(gbps / wire));
		result.put("alloc_bytes_per_mb", moved == 0 ? 0 : Math.round(allocated / (moved / 1e6)));
	}

	private static double gbps(long bytes, long nanos) {
		return nanos == Long.MAX_VALUE || nanos <= 0 ? 0 : bytes / (double) nanos;
	}

	private static long min(long[] values) {
		long m = Long.MAX_VALUE;
		for (long v : values) {
			m = Math.min(m, v);
		}
		return m;
	}

	/**
	 * The same-host path against a single-thread memcpy of the same bytes (see {@link SameHostBench}); gbps and ratio
	 * are null, with the reason, when the rooms could not go through shared memory here.
	 */
	private ObjectNode sameHost(ModelShape shape, long bytes, PrintWriter err) {
		ObjectNode o = JSON.createObjectNode();
		SameHostBench.Result r;
		try {
			r = SameHostBench.run(shape, bytes, rounds, SAME_HOST_WARMUP, json && System.console() == null ? null : err);
		}
		catch (IOException e) {
			failures.add("same host: " + e.getMessage());
			o.putNull("gbps");
			o.putNull("memcpy_gbps");
			o.putNull("ratio");
			return o;
		}
		if (r.sharedMemory()) {
			o.put("gbps", round(r.gbps()));
			o.put("memcpy_gbps", round(r.memcpyGbps()));
			o.put("ratio", round(r.ratio()));
		}
		else {
			o.putNull("gbps");
			o.put("memcpy_gbps", round(r.memcpyGbps()));
			o.putNull("ratio");
			o.put("missing", "the rooms fell back to TCP (no shared /dev/shm here?)");
		}
		o.put("tcp_gbps", round(r.tcpGbps()));
		o.put("spread", r.spread());
		return o;
	}

	/**
	 * @param bulkGbps the bulk room's throughput in this run, or null when bulk was not measured
	 * @return the tiny_pages figures, {@code ratio_to_bulk} among them (null without bulk)
	 */
	private ObjectNode tinyPages(ModelShape shape, NettyKVTransport transport, NettyKVTransport decodeTransport,
			ReactorBootstrapClient client, Double bulkGbps) throws IOException {
		PrintWriter err = spec.commandLine().getErr();
		ObjectNode o = new TinyPagesBench(spec.commandLine(), tiny, stripes, failures, what -> progress(err, what))
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

	/** @return the many test's figures, on the model's first layers */
	private ObjectNode many(ModelShape shape, NettyKVTransport transport, NettyKVTransport decodeTransport,
			ReactorBootstrapClient client) throws IOException {
		return new ManyBench(spec.commandLine(), manyRooms, rounds, manyWarmupSeconds, stripes, failures)
				.run(shape.withLayers(Math.min(MANY_LAYERS, shape.layers())), transport, decodeTransport, client);
	}

	private RoomResult check(RoomResult r) {
		return check(failures, r);
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