package io.kvferry.cli;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import io.kvferry.spi.KVTransport;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;
import picocli.CommandLine;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * The bench's many test: concurrent rooms across prefill TP2 and decode TP2, a batch at a time, against the frame
 * pump, which moves the batch's own frames over two plain connections.
 */
final class ManyBench {

	private static final int MAX_PAGES = 4;
	private static final int MIN_WARMUP_BATCHES = 2;

	private final CommandLine cl;
	private final int rooms;
	private final int rounds;
	private final int warmupSeconds;
	private final StripeOptions stripes;
	private final List<String> failures;

	/**
	 * @param rooms concurrent rooms of a batch
	 * @param rounds timed batches
	 * @param warmupSeconds untimed batches for this long (two at least)
	 * @param failures where a failed room or a wrong pump byte is told
	 */
	ManyBench(CommandLine cl, int rooms, int rounds, int warmupSeconds, StripeOptions stripes, List<String> failures) {
		this.cl = cl;
		this.rooms = rooms;
		this.rounds = rounds;
		this.warmupSeconds = warmupSeconds;
		this.stripes = stripes;
		this.failures = failures;
	}

	/** @return the figures, as {@code --json} prints them under {@code many} */
	ObjectNode run(ModelShape shape, KVTransport transport, KVTransport decodeTransport,
			ReactorBootstrapClient client) throws IOException {
		SplittableRandom sizes = new SplittableRandom(7);
		int[] pages = new int[rooms];
		int total = 0;
		for (int i = 0; i < rooms; i++) {
			pages[i] = 1 + sizes.nextInt(MAX_PAGES);
			total += pages[i];
		}
		// The KV bytes of a batch: every page of each layer buffer, on both ranks.
		long frameBytes = (long) total * shape.itemLen(2) * buffers(shape) * 2;
		DirectMemory.check(cl, 2 * DirectMemory.instanceBytes(shape, 2, 1, 1, total) + 2 * frameBytes,
				"lower --many-rooms");
		// Its own bootstrap server: the first registration of an instance fixes its TP size.
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		KVCluster cluster;
		try {
			cluster = KVCluster.builder().shape(shape).prefill(2, 1, 1).decode(2, 1)
					.capacity(total, rooms + 1).transport(transport).decodeTransport(decodeTransport)
					// As in bulk and small: a room ends where its completion is signalled, as an engine polling poll()
					// sees it, not after a hop to a callback worker (four per room, a thread wake-up each).
					.customize(s -> stripes.apply(s.callbackScheduler(Schedulers.immediate())))
					.bootstrapClient(client)
					.bootstrapAddress(server.address()).startNow(BenchCommand.START_TIMEOUT);
		}
		catch (RuntimeException e) {
			server.disposeNow();
			throw e;
		}
		CleanableDirectBuffer src = PlatformDependent.allocateDirect((int) frameBytes);
		CleanableDirectBuffer dst = PlatformDependent.allocateDirect((int) frameBytes);
		try (TcpBaseline tcp = TcpBaseline.open(); TcpBaseline second = TcpBaseline.open()) {
			TcpBaseline[] pair = { tcp, second };
			TcpBaseline.fill(src.buffer(), 3);
			long[] pump = new long[rounds];
			// The same batch untimed first, until the per-room code is compiled (as bulk and small warm up), then
			// --rounds timed batches: the median counts, the best is shown beside. The frame pump takes its turn
			// after each batch, warm-up included, with the frames of the first batch's rooms.
			long room = 3_000_000L;
			long warmEnd = System.nanoTime() + Duration.ofSeconds(warmupSeconds).toNanos();
			int warmup = 0;
			int[][] frames = null;
			while (warmup < MIN_WARMUP_BATCHES || System.nanoTime() < warmEnd) {
				ManyBatch batch = batch(cluster, shape, pages, room);
				for (RoomResult r : batch.results()) {
					BenchCommand.check(failures, r);
				}
				if (frames == null) {
					frames = frames(shape, batch.staged());
					// The pump's first run lands in zeroed memory: every byte of it is checked once.
					framePump(pair, src, dst, frames);
					if (dst.buffer().mismatch(src.buffer()) >= 0) {
						failures.add("many: the frame pump moved wrong bytes (at "
								+ dst.buffer().mismatch(src.buffer()) + ")");
					}
				}
				framePump(pair, src, dst, frames);
				room += rooms;
				warmup++;
			}
			long[] nanos = new long[rounds];
			long[] cores = new long[rounds];
			double[] gbps = new double[rounds];
			double[] pumpGbps = new double[rounds];
			ArrayNode seconds = BenchCommand.JSON.createArrayNode();
			long bytes = 0;
			int failed = 0;
			for (int i = 0; i < rounds; i++) {
				ManyBatch batch = batch(cluster, shape, pages, room);
				room += rooms;
				nanos[i] = batch.nanos();
				cores[i] = batch.cpuNanos() * 1000 / batch.nanos();
				bytes = 0;
				for (RoomResult r : batch.results()) {
					if (r.ok()) {
						bytes += r.bytes();
					}
					else {
						failed++;
						BenchCommand.check(failures, r);
					}
				}
				gbps[i] = bytes / (double) batch.nanos();
				seconds.add(BenchCommand.round(batch.nanos() / 1e9));
				pump[i] = framePump(pair, src, dst, frames);
				pumpGbps[i] = frameBytes / (double) pump[i];
			}
			ObjectNode spread = RoundSpread.ofRates(gbps, pumpGbps);
			Arrays.sort(gbps);
			ObjectNode o = BenchCommand.JSON.createObjectNode();
			o.put("rooms", rooms);
			o.put("bytes", bytes);
			o.put("batches", rounds);
			o.put("warmup_batches", warmup);
			long elapsed = TcpBaseline.median(nanos.clone());
			o.put("seconds", BenchCommand.round(elapsed / 1e9));
			o.put("gbps", BenchCommand.round(gbps[rounds / 2]));
			o.put("best_gbps", BenchCommand.round(gbps[rounds - 1]));
			o.put("rooms_per_second", Math.round(rooms / (elapsed / 1e9)));
			o.put("failures", failed);
			double pumpMedian = frameBytes / (double) TcpBaseline.median(pump);
			o.put("baseline_gbps", BenchCommand.round(pumpMedian));
			o.put("ratio", BenchCommand.round(gbps[rounds / 2] / pumpMedian));
			o.set("ratio_spread", spread);
			o.put("frames", frames[0].length / 2 + frames[1].length / 2);
			o.set("batch_seconds", seconds);
			// Cores busy while the rooms moved (the process's CPU time over the window): at the machine's core count
			// the rooms are bound by CPU, not by waiting.
			o.put("cpu_cores", TcpBaseline.median(cores) / 1000.0);
			return o;
		}
		finally {
			BenchCommand.close(cluster.close(), "many over " + transport.getClass().getSimpleName(), failures);
			server.disposeNow();
			src.clean();
			dst.clean();
		}
	}

	/** @return nanoseconds of one run of the frame pump over {@code frames} */
	private static long framePump(TcpBaseline[] pair, CleanableDirectBuffer src, CleanableDirectBuffer dst,
			int[][] frames) throws IOException {
		return TcpBaseline.frames(pair, src.buffer(), dst.buffer(), frames);
	}

	/** @return the layer buffers of a rank: K and V of every layer, or one per layer for MLA */
	private static int buffers(ModelShape shape) {
		return shape.layers() * (shape.mla() ? 1 : 2);
	}

	/**
	 * The frames a batch's rooms made, for the frame pump: per room, rank pair and layer buffer, one frame per run of
	 * pages adjacent on both sides (as prefill cuts blocks). Rank {@code r}'s frames go over connection {@code r}.
	 *
	 * @return per connection, (offset, length) pairs laid out one after another
	 */
	private static int[][] frames(ModelShape shape, List<StagedRoom> rooms) {
		int chunk = shape.itemLen(2);
		int buffers = buffers(shape);
		List<List<Integer>> lengths = List.of(new ArrayList<>(), new ArrayList<>());
		for (StagedRoom room : rooms) {
			int[] runs = room.pageRuns();
			for (List<Integer> stream : lengths) {
				for (int b = 0; b < buffers; b++) {
					for (int run : runs) {
						stream.add(run * chunk);
					}
				}
			}
		}
		int[][] frames = new int[2][];
		long offset = 0;
		for (int r = 0; r < 2; r++) {
			List<Integer> stream = lengths.get(r);
			frames[r] = new int[2 * stream.size()];
			for (int f = 0; f < stream.size(); f++) {
				frames[r][2 * f] = Math.toIntExact(offset);
				frames[r][2 * f + 1] = stream.get(f);
				offset += stream.get(f);
			}
		}
		return frames;
	}

	/**
	 * Every room's source pages are written before the clock starts and every destination byte is checked after it
	 * stops: the window holds the transfers only (the pattern's fill and check cost more CPU than the rooms' moves).
	 */
	private ManyBatch batch(KVCluster cluster, ModelShape shape, int[] pages, long firstRoom) {
		List<StagedRoom> staged = new ArrayList<>(rooms);
		for (int i = 0; i < rooms; i++) {
			staged.add(cluster.stage(firstRoom + i, pages[i] * shape.pageSize(), 1, new Random(i)));
		}
		ProcessCpu cpu0 = ProcessCpu.start();
		long start = System.nanoTime();
		Flux.fromIterable(staged)
				.flatMap(room -> room.transfer().subscribeOn(Schedulers.parallel()), rooms)
				.then()
				.block();
		long nanos = System.nanoTime() - start;
		long cpu = cpu0.nanos();
		List<RoomResult> results = new ArrayList<>(rooms);
		for (StagedRoom room : staged) {
			results.add(room.verify());
		}
		return new ManyBatch(staged, results, nanos, cpu);
	}

	/**
	 * The rooms of a batch as staged and as verified; the nanoseconds from the first room's start to the last room's
	 * end, and the process's CPU time over the same window.
	 */
	private record ManyBatch(List<StagedRoom> staged, List<RoomResult> results, long nanos, long cpuNanos) {
	}
}
