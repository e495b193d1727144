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
	// The pumps' runs, in the order ManyPumps.run gives them.
	private static final int FRAME_PUMP = 0;
	private static final int LAID_OUT = 1;
	private static final int ON_PAGES = 2;

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
		ManyPumps pumps = null;
		try {
			long[][] baselines = new long[3][rounds];
			// The same batch untimed first, until the per-room code is compiled (as bulk and small warm up), then
			// --rounds timed batches: the median counts, the best is shown beside. The pumps take their turns after
			// each batch, warm-up included, with the pieces of the first batch's rooms.
			long room = 3_000_000L;
			long warmEnd = System.nanoTime() + Duration.ofSeconds(warmupSeconds).toNanos();
			int warmup = 0;
			while (warmup < MIN_WARMUP_BATCHES || System.nanoTime() < warmEnd) {
				ManyBatch batch = batch(cluster, shape, pages, room);
				for (RoomResult r : batch.results()) {
					BenchCommand.check(failures, r);
				}
				// The pumps warm up beside the rooms, on time of their own: the rooms get the warm-up they had alone.
				long pumped = System.nanoTime();
				if (pumps == null) {
					pumps = ManyPumps.open(cluster, batch.staged(), failures);
				}
				pumps.run();
				warmEnd += System.nanoTime() - pumped;
				room += rooms;
				warmup++;
			}
			long[] nanos = new long[rounds];
			long[] cores = new long[rounds];
			double[] gbps = new double[rounds];
			double[][] pumpGbps = new double[3][rounds];
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
				long[] run = pumps.run();
				for (int p = 0; p < run.length; p++) {
					baselines[p][i] = run[p];
					pumpGbps[p][i] = pumps.bytes() / (double) run[p];
				}
			}
			ObjectNode spread = RoundSpread.ofRates(gbps, pumpGbps[FRAME_PUMP]);
			ObjectNode verdictSpread = RoundSpread.ofRates(gbps, pumpGbps[ON_PAGES]);
			ObjectNode verdictPumpSpread = RoundSpread.ofRates(pumpGbps[ON_PAGES], pumpGbps[FRAME_PUMP]);
			Arrays.sort(gbps);
			double[] medians = new double[3];
			for (int p = 0; p < medians.length; p++) {
				medians[p] = pumps.bytes() / (double) TcpBaseline.median(baselines[p]);
			}
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
			o.put("baseline_gbps", BenchCommand.round(medians[FRAME_PUMP]));
			o.put("ratio", BenchCommand.round(gbps[rounds / 2] / medians[FRAME_PUMP]));
			o.set("ratio_spread", spread);
			o.put("loop_verdict_laid_out_gbps", BenchCommand.round(medians[LAID_OUT]));
			o.put("loop_verdict_gbps", BenchCommand.round(medians[ON_PAGES]));
			o.put("loop_verdict_ratio", BenchCommand.round(medians[ON_PAGES] / medians[FRAME_PUMP]));
			o.set("loop_verdict_ratio_spread", verdictPumpSpread);
			o.put("ratio_to_loop_verdict", BenchCommand.round(gbps[rounds / 2] / medians[ON_PAGES]));
			o.set("ratio_to_loop_verdict_spread", verdictSpread);
			o.put("frames", pumps.frames());
			o.set("batch_seconds", seconds);
			// Cores busy while the rooms moved (the process's CPU time over the window): at the machine's core count
			// the rooms are bound by CPU, not by waiting.
			o.put("cpu_cores", TcpBaseline.median(cores) / 1000.0);
			return o;
		}
		finally {
			try {
				if (pumps != null) {
					pumps.close();
				}
			}
			finally {
				BenchCommand.close(cluster.close(), "many over " + transport.getClass().getSimpleName(), failures);
				server.disposeNow();
			}
		}
	}

	/** @return the layer buffers of a rank: K and V of every layer, or one per layer for MLA */
	private static int buffers(ModelShape shape) {
		return shape.layers() * (shape.mla() ? 1 : 2);
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
