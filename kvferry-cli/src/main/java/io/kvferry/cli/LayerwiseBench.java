package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.DecodeKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * {@code kvferry bench-layerwise}: what layer-wise streaming saves. A 1↔1 pair over loopback serves one room at a
 * time; prefill "computes" each layer for {@code --layer-compute} on a timer and either sends each layer as it is
 * done ({@link KVSender#sendLayer}) or the whole chunk after the last layer ({@link KVSender#send}). Per room it
 * measures the transfer tail, from the end of the last layer's compute to decode's Success, and the room's bytes per
 * second from the first layer's compute on. Both ways run in alternating rounds in the same JVM; the same rounds at
 * zero compute measure the bytes per second of the transfer alone. Every room's bytes are verified on decode.
 */
@Command(name = "bench-layerwise", sortOptions = false, mixinStandardHelpOptions = true,
		description = {
				"Measures the transfer tail with and without layer-wise streaming: prefill computes each layer for "
						+ "--layer-compute (a timer, not the CPU), then sends that layer (layer-wise) or, after the "
						+ "last layer, the whole room (whole-chunk). Tail: end of the last layer's compute to decode's "
						+ "Success. Alternating rounds, medians; bytes per second also at zero compute.",
				"" },
		footer = { "", "Exit status: 0 measured and every byte matched; 1 a room failed; 2 bad usage; "
				+ "3 could not run." })
final class LayerwiseBench implements Callable<Integer> {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
	private static final Duration ROOM_TIMEOUT = Duration.ofSeconds(60);

	@Spec
	CommandSpec spec;

	@Option(names = "--tokens", defaultValue = "1024", paramLabel = "N",
			description = "Prompt tokens of each room (default: ${DEFAULT-VALUE}).")
	int tokens;

	@Option(names = "--layer-compute", defaultValue = "2ms", paramLabel = "DURATION",
			description = "Compute time of one layer on prefill (default: ${DEFAULT-VALUE}).")
	Duration layerCompute;

	@Option(names = "--rounds", defaultValue = "5", paramLabel = "N",
			description = "Timed rounds of each way, after a warm-up round (default: ${DEFAULT-VALUE}).")
	int rounds;

	@Option(names = "--rooms", defaultValue = "4", paramLabel = "N",
			description = "Rooms per round of each way, one at a time (default: ${DEFAULT-VALUE}).")
	int rooms;

	@Mixin
	ModelOptions model;

	@Option(names = "--json", description = "Print the figures as one JSON object on stdout.")
	boolean json;

	@Mixin
	LoggingOptions logging;

	@Override
	public Integer call() {
		CommandLine cl = spec.commandLine();
		ModelOptions.positive(cl, "--tokens", tokens);
		ModelOptions.positive(cl, "--rounds", rounds);
		ModelOptions.positive(cl, "--rooms", rooms);
		return run(cl, model.shape(cl), tokens, layerCompute, rounds, rooms, json);
	}

	/**
	 * Runs the comparison (also behind {@code kvferry demo --layerwise}).
	 *
	 * @return the exit status: 0 when every room succeeded with every byte in place
	 */
	static int run(CommandLine cl, ModelShape shape, int tokens, Duration compute, int rounds, int rooms,
			boolean json) {
		int pages = (tokens + shape.pageSize() - 1) / shape.pageSize();
		DirectMemory.check(cl, 2 * DirectMemory.instanceBytes(shape, 1, 1, 1, pages + 1), "lower --tokens");
		PrintWriter out = cl.getOut();
		PrintWriter err = cl.getErr();
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		// Prefill and decode each with their own event loops, as in two processes.
		NettyKVTransport transport = NettyKVTransport.create();
		NettyKVTransport decodeTransport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		KVCluster cluster = null;
		try {
			cluster = KVCluster.builder().shape(shape).prefill(1, 1, 1).decode(1, 1).capacity(pages + 1, 2)
					.transport(transport).decodeTransport(decodeTransport).bootstrapClient(client)
					.bootstrapAddress(server.address()).startNow(START_TIMEOUT);
			Pair pair = new Pair(cluster, pages);
			Side whole = new Side("whole-chunk");
			Side layerwise = new Side("layer-wise");
			long room = 1;
			// Round 0 warms both ways up and is not counted; then the order alternates, so neither always goes first.
			for (int i = 0; i <= rounds; i++) {
				for (int k = 0; k < 2; k++) {
					boolean lw = (k == 0) == (i % 2 == 0);
					Side side = lw ? layerwise : whole;
					for (int j = 0; j < rooms; j++) {
						Sample timed = pair.room(room++, compute, lw);
						Sample bare = pair.room(room++, Duration.ZERO, lw);
						if (i > 0) {
							side.add(timed, bare);
						}
					}
					if (!json) {
						err.printf(Locale.ROOT, "kvferry bench-layerwise: round %d %-11s tail p50 %.2f ms%n", i,
								side.name, side.tails.isEmpty() ? Double.NaN : median(side.tails) / 1e6);
						err.flush();
					}
				}
			}
			report(out, json, shape, pages, pair.bytes, compute, rounds, rooms, whole, layerwise, pair.failures);
			return pair.failures.isEmpty() ? 0 : 1;
		}
		finally {
			if (cluster != null) {
				Closing.await(cluster.close(), Closing.TIMEOUT, "the layer-wise bench's KV managers");
			}
			transport.dispose();
			decodeTransport.dispose();
			client.dispose();
			server.disposeNow();
		}
	}

	private static void report(PrintWriter out, boolean json, ModelShape shape, int pages, long bytes, Duration compute,
			int rounds, int rooms, Side whole, Side layerwise, List<String> failures) {
		int layers = shape.layers();
		double wholeTail = median(whole.tails);
		double lwTail = median(layerwise.tails);
		// The whole room moves after compute ends without streaming: a layer's share of that is one layer's transfer.
		double oneLayer = wholeTail / layers;
		ObjectNode o = JSON.createObjectNode();
		o.put("bytes_per_room", bytes);
		o.put("layers", layers);
		o.put("layer_compute_ms", compute.toNanos() / 1e6);
		o.put("rounds", rounds);
		o.put("rooms_per_round", rooms);
		for (Side s : List.of(whole, layerwise)) {
			ObjectNode n = o.putObject(s.name.replace('-', '_'));
			n.put("tail_p50_ms", median(s.tails) / 1e6);
			n.put("tail_min_ms", min(s.tails) / 1e6);
			n.put("tail_max_ms", max(s.tails) / 1e6);
			n.put("gbps_p50", gbps(bytes, median(s.totals)));
			n.put("gbps_no_compute_p50", gbps(bytes, median(s.bare)));
		}
		o.put("one_layer_transfer_ms", oneLayer / 1e6);
		o.put("tail_in_layer_transfers", lwTail / oneLayer);
		o.put("no_compute_gbps_ratio", median(whole.bare) / median(layerwise.bare));
		o.put("failures", failures.size());
		if (json) {
			out.println(o);
			out.flush();
			return;
		}
		out.printf(Locale.ROOT, "kvferry bench-layerwise: %d rounds x %d rooms each way, one at a time, 1<->1 loopback;"
				+ " %d pages (%s) per room, %s, layer compute %.3f ms%n", rounds, rooms, pages, Sizes.bytes(bytes),
				ModelOptions.describe(shape), compute.toNanos() / 1e6);
		out.printf(Locale.ROOT, "  %-12s %12s %20s %12s %18s%n", "", "tail p50", "(min..max)", "GB/s p50",
				"GB/s, no compute");
		for (Side s : List.of(whole, layerwise)) {
			out.printf(Locale.ROOT, "  %-12s %9.2f ms %10.2f..%-7.2f ms %9.2f %18.2f%n", s.name, median(s.tails) / 1e6,
					min(s.tails) / 1e6, max(s.tails) / 1e6, gbps(bytes, median(s.totals)),
					gbps(bytes, median(s.bare)));
		}
		out.printf(Locale.ROOT, "  one layer's transfer ~ whole-chunk tail / %d layers = %.3f ms; layer-wise tail = "
				+ "%.2f x that (target <= 2)%n", layers, oneLayer / 1e6, lwTail / oneLayer);
		out.printf(Locale.ROOT, "  bytes/s at zero compute, layer-wise / whole-chunk: %.2f%n",
				median(whole.bare) / median(layerwise.bare));
		out.println("  tail: end of the last layer's compute to decode's Success; GB/s: room bytes over first "
				+ "compute to Success");
		failures.forEach(f -> out.println("  FAILED: " + f));
		out.println("  result: " + (failures.isEmpty() ? "OK, every room succeeded and every byte matched"
				: failures.size() + " rooms FAILED"));
		out.flush();
	}

	private static double gbps(long bytes, double nanos) {
		return nanos <= 0 ? 0 : bytes / nanos;
	}

	static double median(List<Long> xs) {
		List<Long> s = new ArrayList<>(xs);
		s.sort(null);
		int n = s.size();
		return n == 0 ? Double.NaN : n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2.0;
	}

	private static double min(List<Long> xs) {
		return xs.stream().mapToLong(Long::longValue).min().orElse(0);
	}

	private static double max(List<Long> xs) {
		return xs.stream().mapToLong(Long::longValue).max().orElse(0);
	}

	/** One room's figures, in nanoseconds. */
	private record Sample(long tail, long total) {
	}

	/** What one way of sending measured. */
	private static final class Side {
		final String name;
		final List<Long> tails = new ArrayList<>();
		final List<Long> totals = new ArrayList<>();
		final List<Long> bare = new ArrayList<>();

		Side(String name) {
			this.name = name;
		}

		void add(Sample timed, Sample zeroCompute) {
			tails.add(timed.tail);
			totals.add(timed.total);
			bare.add(zeroCompute.total);
		}
	}

	/** The pair's two ranks and their memory: rooms use pages 0..n-1 on both sides. */
	private static final class Pair {
		final PrefillKVManager prefill;
		final DecodeKVManager decode;
		final RankMemory prefillMemory;
		final RankMemory decodeMemory;
		final KVCluster cluster;
		final int[] pages;
		final long bytes;
		final List<String> failures = new ArrayList<>();

		Pair(KVCluster cluster, int n) {
			this.cluster = cluster;
			this.prefill = cluster.prefillManagers().get(0).get(0);
			this.decode = cluster.decodeManagers().get(0);
			this.prefillMemory = cluster.prefillMemory().get(0).get(0);
			this.decodeMemory = cluster.decodeMemory().get(0);
			this.pages = new int[n];
			for (int i = 0; i < n; i++) {
				pages[i] = i;
			}
			this.bytes = decodeMemory.kvBytes(n);
		}

		Sample room(long id, Duration compute, boolean layerwise) {
			prefillMemory.fill(id, pages, 0, new int[0]);
			KVReceiver receiver = decode.receiver(cluster.bootstrapAddress(), id);
			receiver.sendMetadata(pages, 0, new int[0]);
			KVSender sender = prefill.sender(id);
			sender.init(pages.length, 0);
			// Decode asked before prefill starts, as it does in serving: the transfer may begin with the first layer.
			sender.states().filter(s -> s != KVPoll.BOOTSTRAPPING).next().block(ROOM_TIMEOUT);
			long start = System.nanoTime();
			Mono<Long> computed = LayerCompute.forward(List.of(sender), List.of(prefillMemory.kvArgs()), pages,
					new int[0], compute, layerwise, Schedulers.parallel());
			Mono<Long> succeeded = receiver.completion().then(Mono.fromCallable(System::nanoTime));
			try {
				var t = Mono.zip(computed, succeeded).block(ROOM_TIMEOUT);
				String wrong = decodeMemory.verify(id, pages, 0, new int[0]);
				if (wrong != null) {
					failures.add(wrong);
				}
				return new Sample(t.getT2() - t.getT1(), t.getT2() - start);
			}
			catch (RuntimeException e) {
				failures.add("room " + id + ": " + e.getMessage());
				sender.abort("bench gave up");
				receiver.abort("bench gave up");
				// The room's pages are reused by later rooms: wait until no byte can land in them.
				receiver.completion().onErrorResume(x -> Mono.empty()).block(ROOM_TIMEOUT);
				return new Sample(0, 0);
			}
		}
	}
}
