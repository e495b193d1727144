package io.kvferry.cli;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntUnaryOperator;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.management.HotSpotDiagnosticMXBean;
import io.kvferry.DecodeSpec;
import io.kvferry.KVManagerSpec;
import io.kvferry.PrefillSpec;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import io.kvferry.spi.KVTransport;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.internal.PlatformDependent;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * How kvferry's costs grow as its work grows: the bench's {@code scaling} rows. Three sweeps, each changing one thing:
 * concurrent rooms (1-page rooms of a 1-layer model, 64 KiB with the default heads), room size (1↔1, one room at a
 * time) and ranks (prefill TP n ↔ decode TP n, 1-4-page rooms of a 4-layer model, all at once; the median of five
 * batches, with their range, beside the frame pump over as many connections). Each row: rooms per second, GB/s,
 * latency p50/p99, CPU per room (of the whole process, and of its Java threads alone, without the JIT compiler and the
 * garbage collector; the harness's writing and checking of every byte included, except in the ranks rows, which write
 * before the clock and check after it, as their pump does), heap allocation per room, the peak heap and direct memory
 * above what the cluster held before the row, and the transport's pooled direct memory (its high-water mark so far). Per-room figures
 * that stay flat while the row's work grows are what "nothing grows faster than the work" means. Completions are
 * signalled where they happen, as an engine polling {@code poll()} sees them (as in the bulk figures), not after a hop
 * to a callback worker.
 */
final class ScalingBench {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
	private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);
	private static final long SAMPLE_MILLIS = 5;
	private static final int MAX_CONCURRENCY = 10_000;
	// Timed batches of a ranks row, after its warm-up batch.
	private static final int RANK_BATCHES = 5;
	// Rounds of rooms and of their baseline in turn.
	private static final int BASELINE_ROUNDS = 5;
	// Untimed rounds of one-at-a-time rooms at most, until one where the JIT compiler ran at most this share of the CPU.
	private static final int MAX_WARMUP_ROUNDS = 25;
	private static final double QUIET_JIT = 0.02;
	// The threads a room's CPU is split by, as Linux names them (their first 15 characters): both transports' event
	// loops (kvferry-transport-N-M), and the Reactor parallel threads the rooms start on, as an engine's thread would.
	private static final String TRANSPORT_THREADS = "kvferry-transpo";
	private static final String ENGINE_THREADS = "parallel-";

	private final ModelShape shape;
	private final KVTransport prefillTransport;
	private final KVTransport decodeTransport;
	private final ReactorBootstrapClient client;
	private final boolean quick;
	private final Progress progress;
	private long nextRoom = 10_000_000;
	private int failures;
	private String firstFailure;

	/** Prints what is about to run. */
	@FunctionalInterface
	interface Progress {
		void show(String what);
	}

	ScalingBench(ModelShape shape, KVTransport prefillTransport, KVTransport decodeTransport,
			ReactorBootstrapClient client, boolean quick, Progress progress) {
		this.shape = shape;
		this.prefillTransport = prefillTransport;
		this.decodeTransport = decodeTransport;
		this.client = client;
		this.quick = quick;
		this.progress = progress;
	}

	/** @return the first failed room's reason, or null when every room succeeded and verified */
	String firstFailure() {
		return firstFailure;
	}

	/** @return rooms that failed or did not verify */
	int failures() {
		return failures;
	}

	/** Runs the three sweeps. */
	ArrayNode run() {
		ArrayNode rows = JSON.createArrayNode();
		// Each batch starts with a full collection, so that its heap figures start from what is live; G1 then shrinks
		// the heap to a little above that, and a batch of half a second spent itself growing it back (a young
		// collection every few tens of milliseconds: 4<->4 lost a third of its speed to them). Keep the heap a batch
		// grew, as a serving process keeps its own.
		String before = heapFreeRatio("100");
		try {
			concurrency(rows);
			sizes(rows);
			ranks(rows);
		}
		finally {
			heapFreeRatio(before);
		}
		return rows;
	}

	/** @return the JVM's {@code MaxHeapFreeRatio} before it was set to {@code value} (null when it cannot be set) */
	private static String heapFreeRatio(String value) {
		if (value == null) {
			return null;
		}
		try {
			HotSpotDiagnosticMXBean vm = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
			String before = vm.getVMOption("MaxHeapFreeRatio").getValue();
			vm.setVMOption("MaxHeapFreeRatio", value);
			return before;
		}
		catch (RuntimeException e) {
			// Not HotSpot, or the flag cannot be set: the rows then pay for the heap's growth, as before.
			return null;
		}
	}

	private void concurrency(ArrayNode rows) {
		int[] levels = { 1, 10, 100, 1_000, MAX_CONCURRENCY };
		int minRooms = quick ? 1_000 : 4_000;
		int max = levels[levels.length - 1];
		ModelShape one = shape.withLayers(1);
		progress.show("scaling: concurrent rooms " + Arrays.toString(levels) + ", 1-page rooms of "
				+ Sizes.bytes(DirectMemory.instanceBytes(one, 1, 1, 1, 1)));
		withCluster(one, 1, max, false, cluster -> {
			batch(cluster, one, 2 * minRooms, 100, i -> 1); // warm-up, not reported
			for (int n : levels) {
				rows.add(row("rooms", n, batch(cluster, one, Math.max(n, minRooms), n, i -> 1)));
			}
		});
	}

	private void sizes(ArrayNode rows) {
		ModelShape one = shape.withLayers(1);
		long page = DirectMemory.instanceBytes(one, 1, 1, 1, 1);
		long[] sizes = quick ? new long[] { 64L << 10, 1L << 20, 16L << 20, 256L << 20 }
				: new long[] { 64L << 10, 1L << 20, 16L << 20, 256L << 20, 1L << 30 };
		int maxPages = (int) Math.max(1, sizes[sizes.length - 1] / page);
		progress.show("scaling: room sizes " + Sizes.bytes(sizes[0]) + " .. " + Sizes.bytes(sizes[sizes.length - 1])
				+ ", 1<->1, one at a time");
		withCluster(one, 1, maxPages, true, cluster -> {
			batch(cluster, one, 5, 1, i -> maxPages); // warm-up, not reported
			for (long size : sizes) {
				int pages = (int) Math.max(1, size / page);
				// Enough rooms that a row's CPU is not one moment's collector or compiler work: 2,000 of 64 KiB.
				long rooms = Math.max(3, Math.min(quick ? 2_000 : 10_000, (quick ? 512L << 20 : 2L << 30) / size));
				ObjectNode row = row("room_bytes", pages * page, batch(cluster, one, (int) rooms, 1, i -> pages));
				if (size == sizes[0]) {
					pingPong(cluster, one, pages, row);
				}
				rows.add(row);
			}
		});
	}

	/**
	 * Holds the smallest rooms one at a time against a ping-pong of their bytes, in turn: rounds of rooms (their bytes
	 * written before and checked after the clock, as the ping-pong writes and checks none), of round trips between
	 * blocked threads and of the event loops' ping-pong with a verdict (a room's three trips and nothing else), CPU per
	 * room against CPU per round trip, medians of the rounds. Rooms first run untimed rounds until the JIT compiler
	 * is quiet: tens of thousands of rooms into a run it still compiles the rooms' code at times, for up to as much CPU
	 * as the rooms' own, which is the process warming up, not what a room costs.
	 */
	private void pingPong(KVCluster cluster, ModelShape one, int pages, ObjectNode row) {
		int perRound = quick ? 400 : 1_000;
		long[] rooms = new long[BASELINE_ROUNDS];
		long[] jit = new long[BASELINE_ROUNDS];
		long[] transport = new long[BASELINE_ROUNDS];
		long[] engine = new long[BASELINE_ROUNDS];
		long[] exchanges = new long[BASELINE_ROUNDS];
		long[] p50 = new long[BASELINE_ROUNDS];
		long[] verdicts = new long[BASELINE_ROUNDS];
		long[] verdictP50 = new long[BASELINE_ROUNDS];
		long[] verdictLoops = new long[BASELINE_ROUNDS];
		double[] ratios = new double[BASELINE_ROUNDS];
		double[] verdictRatios = new double[BASELINE_ROUNDS];
		try (ScalingBaselines.PingPong pp = new ScalingBaselines.PingPong(Math.toIntExact(row.get("value").asLong()))) {
			pp.run(perRound); // warm-ups, not reported
			pp.runWithVerdict(perRound);
			int warm = 0;
			while (warm < MAX_WARMUP_ROUNDS) {
				warm++;
				Batch b = batch(cluster, one, perRound, 1, i -> pages, true);
				if (b.jitNanos <= QUIET_JIT * b.cpuNanos) {
					break;
				}
			}
			row.put("warmup_rounds", warm);
			for (int r = 0; r < BASELINE_ROUNDS; r++) {
				Batch b = batch(cluster, one, perRound, 1, i -> pages, true);
				rooms[r] = b.cpuNanos / perRound;
				jit[r] = b.jitNanos / perRound;
				transport[r] = b.transportNanos / perRound;
				engine[r] = b.engineNanos / perRound;
				long[] exchange = pp.run(perRound);
				exchanges[r] = exchange[0];
				p50[r] = exchange[1];
				ratios[r] = rooms[r] / (double) Math.max(1, exchanges[r]);
				long[] verdict = pp.runWithVerdict(perRound);
				verdicts[r] = verdict[0];
				verdictP50[r] = verdict[1];
				verdictLoops[r] = verdict[2];
				verdictRatios[r] = rooms[r] / (double) Math.max(1, verdicts[r]);
			}
		}
		Arrays.sort(ratios);
		Arrays.sort(verdictRatios);
		row.put("pingpong_rounds", BASELINE_ROUNDS);
		row.put("pingpong_cpu_us", Math.round(TcpBaseline.median(exchanges) / 1e3));
		row.put("pingpong_p50_us", Math.round(TcpBaseline.median(p50) / 1e3));
		row.put("rounds_cpu_us_per_room", Math.round(TcpBaseline.median(rooms) / 1e3));
		row.put("rounds_jit_us_per_room", Math.round(TcpBaseline.median(jit) / 1e3));
		row.put("rounds_transport_cpu_us_per_room", Math.round(TcpBaseline.median(transport) / 1e3));
		row.put("rounds_engine_cpu_us_per_room", Math.round(TcpBaseline.median(engine) / 1e3));
		row.put("cpu_ratio_to_pingpong", BenchCommand.round(ratios[BASELINE_ROUNDS / 2]));
		row.put("loop_verdict_cpu_us", Math.round(TcpBaseline.median(verdicts) / 1e3));
		row.put("loop_verdict_p50_us", Math.round(TcpBaseline.median(verdictP50) / 1e3));
		row.put("loop_verdict_loops_cpu_us", Math.round(TcpBaseline.median(verdictLoops) / 1e3));
		row.put("cpu_ratio_to_loop_verdict", BenchCommand.round(verdictRatios[BASELINE_ROUNDS / 2]));
	}

	private void ranks(ArrayNode rows) {
		ModelShape four = shape.withLayers(Math.min(4, shape.layers()));
		int rooms = 1_000;
		for (int tp : new int[] { 1, 2, 4 }) {
			if (four.kvHeads() % tp != 0 && tp % four.kvHeads() != 0) {
				continue;
			}
			progress.show("scaling: ranks " + tp + "<->" + tp + ", " + rooms + " concurrent 1-4-page rooms");
			IntUnaryOperator pages = i -> 1 + i % 4;
			withCluster(four, tp, 4 * rooms, false, cluster -> {
				try (ScalingBaselines.RanksPump pump = new ScalingBaselines.RanksPump(four, tp, rooms, pages)) {
					batch(cluster, four, rooms, rooms, pages, true); // warm-up, not reported
					pump.run();
					// One batch lasts half a second: one is no figure on a VM that varies by a fifth. The median
					// batch's row, with the range of all; the frame pump takes its turn after each batch.
					List<Batch> timed = new ArrayList<>();
					long[] pumped = new long[RANK_BATCHES];
					for (int b = 0; b < RANK_BATCHES; b++) {
						timed.add(batch(cluster, four, rooms, rooms, pages, true));
						pumped[b] = pump.run();
					}
					timed.sort(Comparator.comparingDouble(Batch::gbps));
					ObjectNode row = row("ranks", tp, timed.get(timed.size() / 2));
					row.put("batches", timed.size());
					row.put("gbps_min", BenchCommand.round(timed.get(0).gbps()));
					row.put("gbps_max", BenchCommand.round(timed.get(timed.size() - 1).gbps()));
					double pumpGbps = pump.bytes() / (double) TcpBaseline.median(pumped);
					row.put("pump_gbps", BenchCommand.round(pumpGbps));
					row.put("ratio_to_pump", BenchCommand.round(row.get("gbps").asDouble() / pumpGbps));
					rows.add(row);
				}
			});
		}
	}

	/**
	 * @return the spec with completions signalled where they happen, and room for the largest row's rooms at once:
	 *         decode's bound of rooms in flight and prefill's of rooms sent before decode asked for them (the harness
	 *         opens a room's sender and receiver together) would otherwise refuse some of them
	 */
	private static KVManagerSpec<?, ?> spec(KVManagerSpec<?, ?> spec) {
		KVManagerSpec<?, ?> s = spec.callbackScheduler(Schedulers.immediate());
		if (s instanceof DecodeSpec d) {
			return d.maxRooms(MAX_CONCURRENCY, MAX_CONCURRENCY);
		}
		return s instanceof PrefillSpec p ? p.optimisticSends(MAX_CONCURRENCY, START_TIMEOUT)
				.unclaimedRooms(MAX_CONCURRENCY, MAX_CONCURRENCY) : s;
	}

	private interface ClusterWork {
		void run(KVCluster cluster);
	}

	private void withCluster(ModelShape s, int tp, int pages, boolean contiguous, ClusterWork work) {
		// Its own bootstrap server per cluster: the first registration of an instance fixes its TP size.
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		try {
			KVCluster cluster = KVCluster.builder().shape(s).prefill(tp, 1, 1).decode(tp, 1)
					.capacity(pages, pages + 1).contiguous(contiguous).transport(prefillTransport)
					.customize(ScalingBench::spec)
					.decodeTransport(decodeTransport).bootstrapClient(client).bootstrapAddress(server.address())
					.startNow(START_TIMEOUT);
			try {
				work.run(cluster);
			}
			finally {
				Closing.await(cluster.close(), CLOSE_TIMEOUT, "the scaling sweep's KV managers");
			}
		}
		finally {
			server.disposeNow();
		}
	}

	/** What one batch measured. */
	private record Batch(int rooms, int concurrency, long bytes, long nanos, long[] latencies, long cpuNanos,
			long jitNanos, long transportNanos, long engineNanos, long threadCpuNanos, long allocated, long heapPeak, long directPeak, long poolPeak) {

		double gbps() {
			return bytes / (double) nanos;
		}
	}

	private Batch batch(KVCluster cluster, ModelShape s, int rooms, int concurrency, IntUnaryOperator pages) {
		return batch(cluster, s, rooms, concurrency, pages, false);
	}

	/**
	 * @param stageFirst write every room's source bytes before the clock starts and check every destination byte
	 *        after it stops, so that the window holds the rooms' own work only (as the many test's); otherwise each
	 *        room's writing and checking run inside the window, as the rows always measured
	 */
	private Batch batch(KVCluster cluster, ModelShape s, int rooms, int concurrency, IntUnaryOperator pages,
			boolean stageFirst) {
		long first = nextRoom;
		nextRoom += rooms;
		List<StagedRoom> staged = new ArrayList<>();
		for (int i = 0; stageFirst && i < rooms; i++) {
			staged.add(cluster.stage(first + i, pages.applyAsInt(i) * s.pageSize(), 1, new Random(first + i)));
		}
		System.gc();
		MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
		long heapBefore = memory.getHeapMemoryUsage().getUsed();
		long directBefore = direct();
		AtomicLong heapPeak = new AtomicLong(heapBefore);
		AtomicLong directPeak = new AtomicLong(directBefore);
		AtomicLong poolPeak = new AtomicLong(pool());
		// Sampled on a timer thread of its own, away from the event loops and the rooms' callbacks.
		Scheduler timer = Schedulers.newSingle("kvferry-bench-memory-sampler", true);
		Disposable sampler = Flux.interval(Duration.ZERO, Duration.ofMillis(SAMPLE_MILLIS), timer).subscribe(tick -> {
			heapPeak.accumulateAndGet(memory.getHeapMemoryUsage().getUsed(), Math::max);
			directPeak.accumulateAndGet(direct(), Math::max);
			poolPeak.accumulateAndGet(pool(), Math::max);
		});
		ProcessCpu cpuBefore = ProcessCpu.start();
		long threadCpuBefore = threadCpu();
		long allocBefore = BenchCommand.allocatedBytes();
		long start = System.nanoTime();
		List<RoomResult> results = null;
		if (stageFirst) {
			Flux.fromIterable(staged)
					.flatMap(r -> r.transfer().subscribeOn(Schedulers.parallel()), concurrency)
					.then()
					.block();
		}
		else {
			results = Flux.range(0, rooms)
					.flatMap(i -> cluster.run(first + i, pages.applyAsInt(i) * s.pageSize(), 1, new Random(first + i))
							.subscribeOn(Schedulers.parallel()), concurrency)
					.collectList()
					.block();
		}
		long nanos = System.nanoTime() - start;
		long allocated = BenchCommand.allocatedBytes() - allocBefore;
		long cpuNanos = cpuBefore.nanos();
		long jitNanos = cpuBefore.compilerNanos();
		long transportNanos = cpuBefore.nanosOf(TRANSPORT_THREADS);
		long engineNanos = cpuBefore.nanosOf(ENGINE_THREADS);
		long threadCpuNanos = threadCpu() - threadCpuBefore;
		sampler.dispose();
		timer.dispose();
		if (stageFirst) {
			results = staged.stream().map(StagedRoom::verify).toList();
		}
		long bytes = 0;
		long[] latencies = new long[results.size()];
		int k = 0;
		for (RoomResult r : results) {
			if (r.ok()) {
				bytes += r.bytes();
				latencies[k++] = r.latencyNanos();
			}
			else {
				failures++;
				if (firstFailure == null) {
					firstFailure = "room " + r.room() + ": " + r.failure();
				}
			}
		}
		return new Batch(rooms, concurrency, bytes, nanos, Arrays.copyOf(latencies, k), cpuNanos, jitNanos,
				transportNanos, engineNanos, threadCpuNanos,
				allocated, Math.max(0, heapPeak.get() - heapBefore), Math.max(0, directPeak.get() - directBefore),
				poolPeak.get());
	}

	private static ObjectNode row(String dimension, long value, Batch b) {
		ObjectNode o = JSON.createObjectNode();
		o.put("dimension", dimension);
		o.put("value", value);
		o.put("rooms", b.rooms);
		o.put("concurrency", b.concurrency);
		o.put("rooms_per_second", Math.round(b.rooms / (b.nanos / 1e9)));
		o.put("gbps", BenchCommand.round(b.gbps()));
		Arrays.sort(b.latencies);
		o.put("p50_us", b.latencies.length == 0 ? 0 : Math.round(b.latencies[b.latencies.length / 2] / 1e3));
		o.put("p99_us", b.latencies.length == 0 ? 0
				: Math.round(b.latencies[Math.min(b.latencies.length - 1, (int) (b.latencies.length * 0.99))] / 1e3));
		o.put("cpu_us_per_room", Math.round(b.cpuNanos / 1e3 / b.rooms));
		o.put("thread_cpu_us_per_room", Math.round(b.threadCpuNanos / 1e3 / b.rooms));
		o.put("alloc_bytes_per_room", b.allocated / b.rooms);
		o.put("heap_peak_bytes", b.heapPeak);
		o.put("direct_peak_bytes", b.directPeak);
		o.put("transport_pool_bytes", b.poolPeak);
		return o;
	}

	/** @return direct memory in use: the JDK's buffers plus what Netty allocates outside them */
	private static long direct() {
		return DirectMemory.used() + Math.max(0, PlatformDependent.usedDirectMemory());
	}

	/**
	 * @return direct memory the transport's pooled allocator holds in its arenas: it keeps what it grew to, so this is
	 *         the high-water mark of transport buffers so far, whatever the row
	 */
	private static long pool() {
		return PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory();
	}

	/**
	 * @return CPU time of the live Java threads so far, in nanoseconds: the process's without the JIT compiler's and
	 *         the collector's threads (0 when the JVM does not tell)
	 */
	private static long threadCpu() {
		ThreadMXBean threads = ManagementFactory.getThreadMXBean();
		if (!threads.isThreadCpuTimeSupported()) {
			return 0;
		}
		long sum = 0;
		for (long id : threads.getAllThreadIds()) {
			sum += Math.max(0, threads.getThreadCpuTime(id));
		}
		return sum;
	}
}
