package io.kvferry.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import io.kvferry.spi.KVTransport;
import picocli.CommandLine;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * The bench's tiny_pages scenario: the model's shape with page size 1 (each token of each layer buffer is its own
 * page, SGLang's default), batches of concurrent long rooms whose token slots are scattered in short runs as a busy
 * pool scatters them, 1&lt;-&gt;1 and 2&lt;-&gt;2, against {@link TinyPump}, which moves the same pieces with the same
 * gather and scatter over plain connections and does nothing else. Batches and pump runs take turns.
 */
final class TinyPagesBench {

	// Runs of 1 to 4 adjacent free slots: a pool whose free list many rooms have shuffled.
	private static final int MAX_RUN = 4;
	// A busy pool: the batch takes four fifths of it, so the scattered runs meet used slots.
	private static final int POOL_SHARE = 4;

	private final CommandLine cl;
	private final TinyPagesOptions options;
	private final StripeOptions stripes;
	private final List<String> failures;
	private final Consumer<String> progress;

	TinyPagesBench(CommandLine cl, TinyPagesOptions options, StripeOptions stripes, List<String> failures,
			Consumer<String> progress) {
		this.cl = cl;
		this.options = options;
		this.stripes = stripes;
		this.failures = failures;
		this.progress = progress;
	}

	/**
	 * @param model the model's shape (its page size is replaced by 1)
	 * @return the figures, as {@code --json} prints them under {@code tiny_pages}: the 1&lt;-&gt;1 ones at the top,
	 *         the 2&lt;-&gt;2 ones under {@code tp2}
	 */
	ObjectNode run(ModelShape model, KVTransport transport, KVTransport decodeTransport,
			ReactorBootstrapClient client) throws IOException {
		ModelShape shape = model.withPageSize(1);
		SplittableRandom lengths = new SplittableRandom(11);
		int[] tokens = new int[options.rooms];
		int total = 0;
		int min = options.maxTokens / 4;
		for (int i = 0; i < tokens.length; i++) {
			tokens[i] = min + lengths.nextInt(options.maxTokens - min + 1);
			total += tokens[i];
		}
		ObjectNode o = layout(shape, 1, tokens, total, transport, decodeTransport, client);
		ObjectNode tp2 = layout(shape, 2, tokens, total, transport, decodeTransport, client);
		o.put("failures", o.get("failures").asInt() + tp2.get("failures").asInt());
		o.set("tp2", tp2);
		return o;
	}

	private ObjectNode layout(ModelShape shape, int tp, int[] tokens, int total, KVTransport transport,
			KVTransport decodeTransport, ReactorBootstrapClient client) throws IOException {
		int pool = total + total / POOL_SHARE;
		DirectMemory.check(cl, 2 * DirectMemory.instanceBytes(shape, tp, 1, 1, pool),
				"lower --tiny-tokens or --tiny-rooms");
		progress.accept("tiny_pages: " + tokens.length + " rooms of " + Arrays.toString(tokens) + " tokens, page size 1, "
				+ tp + "<->" + tp);
		// Its own bootstrap server: the first registration of an instance fixes its TP size.
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		KVCluster cluster;
		try {
			cluster = KVCluster.builder().shape(shape).prefill(tp, 1, 1).decode(tp, 1)
					.capacity(pool, tokens.length + 1).scatterRuns(MAX_RUN)
					.transport(transport).decodeTransport(decodeTransport)
					// As the other scenarios: a room ends where its completion is signalled, not after a hop.
					.customize(s -> stripes.apply(s.callbackScheduler(Schedulers.immediate())))
					.bootstrapClient(client)
					.bootstrapAddress(server.address()).startNow(BenchCommand.START_TIMEOUT);
		}
		catch (RuntimeException e) {
			server.disposeNow();
			throw e;
		}
		TcpBaseline[] streams = new TcpBaseline[tp];
		LoopRoomPump loops = null;
		try {
			for (int r = 0; r < tp; r++) {
				streams[r] = TcpBaseline.open();
			}
			long room = 5_000_000L;
			// The pumps move the pieces of the first batch's rooms, each checked once into zeroed slots.
			Batch first = batch(cluster, tokens, room);
			room += tokens.length;
			RoomPieces pieces = RoomPieces.of(cluster, first.staged());
			TinyPump pump = new TinyPump(pieces);
			pieces.clearDestinations();
			pump.run(streams);
			checkPump(cluster, first.staged());
			pieces.clearDestinations();
			loops = LoopRoomPump.open(pieces, LoopRoomPump.THREADS);
			loops.run();
			if (!pieces.landed()) {
				failures.add("tiny_pages: the event-loop room pump moved wrong bytes");
			}
			int failed = first.failed();
			for (int i = 1; i < options.warmup; i++) {
				failed += batch(cluster, tokens, room).failed();
				room += tokens.length;
				pump.run(streams);
				loops.run();
			}
			double[] gbps = new double[options.rounds];
			double[] pumpGbps = new double[options.rounds];
			double[] loopGbps = new double[options.rounds];
			for (int i = 0; i < options.rounds; i++) {
				Batch b = batch(cluster, tokens, room);
				room += tokens.length;
				failed += b.failed();
				gbps[i] = b.bytes() / (double) b.nanos();
				pumpGbps[i] = pump.bytes() / (double) pump.run(streams);
				loopGbps[i] = pump.bytes() / (double) loops.run();
			}
			ObjectNode spread = RoundSpread.ofRates(gbps, pumpGbps);
			ObjectNode loopSpread = RoundSpread.ofRates(gbps, loopGbps);
			ObjectNode loopPumpSpread = RoundSpread.ofRates(loopGbps, pumpGbps);
			Arrays.sort(gbps);
			Arrays.sort(pumpGbps);
			Arrays.sort(loopGbps);
			double median = gbps[gbps.length / 2];
			double pumpMedian = pumpGbps[pumpGbps.length / 2];
			double loopMedian = loopGbps[loopGbps.length / 2];
			ObjectNode o = BenchCommand.JSON.createObjectNode();
			o.put("ranks", tp);
			o.put("rooms", tokens.length);
			o.put("tokens", total);
			o.put("bytes", pump.bytes());
			o.put("pieces", pump.pieces());
			o.put("rounds", options.rounds);
			o.put("warmup_batches", options.warmup);
			o.put("gbps", BenchCommand.round(median));
			o.put("gbps_min", BenchCommand.round(gbps[0]));
			o.put("gbps_max", BenchCommand.round(gbps[gbps.length - 1]));
			o.put("pump_gbps", BenchCommand.round(pumpMedian));
			o.put("pump_gbps_min", BenchCommand.round(pumpGbps[0]));
			o.put("pump_gbps_max", BenchCommand.round(pumpGbps[pumpGbps.length - 1]));
			o.put("ratio_to_pump", BenchCommand.round(median / pumpMedian));
			o.set("ratio_to_pump_spread", spread);
			o.put("loop_verdict_gbps", BenchCommand.round(loopMedian));
			o.put("loop_verdict_ratio", BenchCommand.round(loopMedian / pumpMedian));
			o.set("loop_verdict_ratio_spread", loopPumpSpread);
			o.put("ratio_to_loop_verdict", BenchCommand.round(median / loopMedian));
			o.set("ratio_to_loop_verdict_spread", loopSpread);
			o.put("failures", failed);
			return o;
		}
		finally {
			if (loops != null) {
				loops.close();
			}
			for (TcpBaseline s : streams) {
				if (s != null) {
					s.close();
				}
			}
			BenchCommand.close(cluster.close(), "tiny_pages over " + transport.getClass().getSimpleName(), failures);
			server.disposeNow();
		}
	}

	/** Tells in the failures when the pump's first run left a destination byte unlike the room's pattern. */
	private void checkPump(KVCluster cluster, List<StagedRoom> rooms) {
		for (StagedRoom room : rooms) {
			for (RankMemory mem : cluster.decodeMemory()) {
				String wrong = mem.verify(room.room(), room.destinationPages(), room.prefixPages(), -1, new int[0]);
				if (wrong != null) {
					failures.add("tiny_pages: the pump moved wrong bytes: " + wrong);
					return;
				}
			}
		}
	}

	/**
	 * Every room's source slots are written before the clock starts and every destination byte is checked after it
	 * stops: the window holds the transfers only.
	 */
	private Batch batch(KVCluster cluster, int[] tokens, long firstRoom) {
		List<StagedRoom> staged = new ArrayList<>(tokens.length);
		for (int i = 0; i < tokens.length; i++) {
			staged.add(cluster.stage(firstRoom + i, tokens[i], 1, new Random(firstRoom + i)));
		}
		long start = System.nanoTime();
		Flux.fromIterable(staged)
				.flatMap(room -> room.transfer().subscribeOn(Schedulers.parallel()), tokens.length)
				.then()
				.block();
		long nanos = System.nanoTime() - start;
		long bytes = 0;
		int failed = 0;
		for (StagedRoom room : staged) {
			RoomResult r = room.verify();
			if (r.ok()) {
				bytes += r.bytes();
			}
			else {
				failed++;
				BenchCommand.check(failures, r);
			}
		}
		return new Batch(staged, nanos, bytes, failed);
	}

	/** A batch's rooms as staged, the nanoseconds its transfers took, the bytes that landed and its failed rooms. */
	private record Batch(List<StagedRoom> staged, long nanos, long bytes, int failed) {
	}
}
