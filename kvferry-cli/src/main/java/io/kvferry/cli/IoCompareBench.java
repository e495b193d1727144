package io.kvferry.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.IoMode;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.scheduler.Schedulers;

/**
 * {@code kvferry bench --io-compare}: the bulk room over Epoll and over io_uring in one run. Two 1↔1 pairs on loopback,
 * one whose transports run Epoll and one whose transports run io_uring (required: where it is unavailable the run
 * fails naming why); each warms up, then every round moves one room on each, in turn, so that both meet the same
 * machine; medians count, with the range. Every room's bytes are checked after its clock stopped.
 *
 * <p>Then 1-page rooms on each pair in turn, each mode's against a TCP ping-pong (the small test), and each further test
 * (the many batch, page size 1) runs whole on each mode's transports, Epoll first: a test
 * interleaves its own baseline with its rounds, so its ratio to that baseline is what compares the two modes when the
 * machine drifts between them.
 */
final class IoCompareBench {

	/** A test run whole on one mode's transports. */
	@FunctionalInterface
	interface Runner {
		ObjectNode run(NettyKVTransport prefill, NettyKVTransport decode, ReactorBootstrapClient client)
				throws IOException;
	}

	/**
	 * @param name its key in the output
	 * @param baselineRatio the key of its ratio to the baseline it runs in turn with its rounds
	 */
	record Scenario(String name, String baselineRatio, Runner runner) {
	}

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration TIMEOUT = Duration.ofMinutes(2);
	private static final IoMode[] MODES = { IoMode.EPOLL, IoMode.IO_URING };

	private IoCompareBench() {
	}

	/** @return the exit status: 0 when every room succeeded with its bytes intact */
	static int run(ModelShape shape, int bulkPages, long bulkBytes, int rounds, int warmup, int smallIterations,
			Duration smallWarmup, StripeOptions stripes, List<Scenario> scenarios, boolean json, PrintWriter out)
			throws IOException {
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		// A bootstrap server per pair: both pairs' prefill ranks are rank 0 of an instance.
		List<DisposableBootstrapServer> servers = new ArrayList<>();
		List<NettyKVTransport> transports = new ArrayList<>();
		List<KVCluster> pairs = new ArrayList<>();
		List<String> failures = new ArrayList<>();
		try {
			for (IoMode mode : MODES) {
				DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
				servers.add(server);
				NettyKVTransport prefill = NettyKVTransport.create().ioMode(mode, true);
				NettyKVTransport decode = NettyKVTransport.create().ioMode(mode, true);
				transports.add(prefill);
				transports.add(decode);
				pairs.add(KVCluster.builder().shape(shape).prefill(1, 1, 1).decode(1, 1).capacity(bulkPages, 64)
						.contiguous(true).transport(prefill).decodeTransport(decode).bootstrapClient(client)
						.customize(spec -> stripes.apply(spec.callbackScheduler(Schedulers.immediate())))
						.bootstrapAddress(server.address()).startNow(TIMEOUT));
			}
			int tokens = bulkPages * shape.pageSize();
			Random random = new Random(5);
			long room = 1;
			List<List<Long>> nanos = List.of(new ArrayList<>(), new ArrayList<>());
			for (int i = -warmup; i < rounds; i++) {
				for (int m = 0; m < MODES.length; m++) {
					RoomResult r = BenchCommand.check(failures, pairs.get(m).run(room++, tokens, 1, random)
							.block(TIMEOUT));
					if (i >= 0 && r.ok()) {
						nanos.get(m).add(r.latencyNanos());
					}
				}
			}
			ObjectNode o = JSON.createObjectNode();
			o.put("bytes", bulkBytes);
			o.put("stripes", stripes.stripes);
			o.put("rounds", rounds);
			o.put("warmup_rooms", warmup);
			double[] gbps = new double[MODES.length];
			for (int m = 0; m < MODES.length; m++) {
				List<Long> t = nanos.get(m);
				gbps[m] = t.isEmpty() ? 0 : bulkBytes / SmallUnderBulkBench.median(t);
				String key = MODES[m].label();
				o.put(key + "_gbps", BenchCommand.round(gbps[m]));
				o.put(key + "_gbps_min", t.isEmpty() ? 0 : BenchCommand.round(bulkBytes / (double) Collections.max(t)));
				o.put(key + "_gbps_max", t.isEmpty() ? 0 : BenchCommand.round(bulkBytes / (double) Collections.min(t)));
			}
			o.put("ratio", gbps[0] == 0 ? 0 : BenchCommand.round(gbps[1] / gbps[0]));
			o.set("small", small(pairs, shape, bulkBytes / bulkPages, smallIterations, smallWarmup, failures));
			// The bulk pairs' memory is not needed any more: the tests below size their own.
			for (KVCluster pair : pairs) {
				pair.close().block(TIMEOUT);
			}
			pairs.clear();
			for (Scenario s : scenarios) {
				o.set(s.name(), compare(s, transports, client));
			}
			o.put("failures", failures.size() + scenarios.stream()
					.mapToInt(s -> o.get(s.name()).get("failures").asInt()).sum());
			if (json) {
				ObjectNode result = JSON.createObjectNode();
				result.set("io_compare", o);
				out.println(result);
			}
			else {
				out.printf(Locale.ROOT, "kvferry bench --io-compare: a %s room 1<->1 over %d stripe(s), %d rounds after "
						+ "%d warm-up rooms each, %s%n", Sizes.bytes(bulkBytes), stripes.stripes, rounds, warmup,
						ModelOptions.describe(shape));
				out.printf(Locale.ROOT, "  epoll     %6.2f GB/s (%.2f-%.2f)%n", gbps[0],
						o.get("epoll_gbps_min").asDouble(), o.get("epoll_gbps_max").asDouble());
				out.printf(Locale.ROOT, "  io_uring  %6.2f GB/s (%.2f-%.2f), %.2f of epoll%n", gbps[1],
						o.get("io_uring_gbps_min").asDouble(), o.get("io_uring_gbps_max").asDouble(),
						o.get("ratio").asDouble());
				JsonNode small = o.get("small");
				out.printf(Locale.ROOT, "  1-page p50 epoll %.0f us (%.2f of its ping-pong), io_uring %.0f us (%.2f): "
						+ "%.2f of epoll's%n", small.get("epoll_p50_us").asDouble(),
						small.get("epoll_ratio_to_baseline").asDouble(), small.get("io_uring_p50_us").asDouble(),
						small.get("io_uring_ratio_to_baseline").asDouble(), small.get("p50_ratio").asDouble());
				for (Scenario s : scenarios) {
					JsonNode c = o.get(s.name());
					out.printf(Locale.ROOT, "  %-10s epoll %.2f GB/s (%.2f of its baseline), io_uring %.2f GB/s (%.2f): "
							+ "%.2f of epoll, %.2f baseline to baseline%n", s.name(), c.get("epoll_gbps").asDouble(),
							c.get("epoll_ratio_to_baseline").asDouble(), c.get("io_uring_gbps").asDouble(),
							c.get("io_uring_ratio_to_baseline").asDouble(), c.get("ratio").asDouble(),
							c.get("baseline_ratio").asDouble());
				}
				out.println("  result: " + (o.get("failures").asInt() == 0 ? "OK, every byte matched"
						: o.get("failures").asInt() + " rooms FAILED"
								+ (failures.isEmpty() ? "" : ", first: " + failures.get(0))));
			}
			out.flush();
			return o.get("failures").asInt() == 0 ? 0 : 1;
		}
		finally {
			for (KVCluster pair : pairs) {
				pair.close().block(TIMEOUT);
			}
			transports.forEach(t -> t.disposeNow(TIMEOUT));
			client.dispose();
			servers.forEach(DisposableBootstrapServer::disposeNow);
		}
	}

	/**
	 * 1-page rooms on each mode's pair, each mode's run against a TCP ping-pong in turn.
	 *
	 * @return p50 per mode, each one's ratio to its ping-pong, and io_uring's p50 over Epoll's ({@code p50_ratio}:
	 *         below 1 when io_uring is faster)
	 */
	private static ObjectNode small(List<KVCluster> pairs, ModelShape shape, long pageBytes, int iterations,
			Duration warmup, List<String> failures) throws IOException {
		ObjectNode c = JSON.createObjectNode();
		double[] p50 = new double[MODES.length];
		for (int m = 0; m < MODES.length; m++) {
			ObjectNode r = SmallBench.run(pairs.get(m), shape, 1, pageBytes, iterations, warmup,
					x -> BenchCommand.check(failures, x));
			p50[m] = r.get("p50_us").asDouble();
			String key = MODES[m].label();
			c.put(key + "_p50_us", BenchCommand.round(p50[m]));
			c.put(key + "_ratio_to_baseline", r.get("ratio").asDouble());
			c.set(key, r);
		}
		c.put("p50_ratio", p50[0] == 0 ? 0 : BenchCommand.round(p50[1] / p50[0]));
		return c;
	}

	/**
	 * @param transports prefill's and decode's transport of each mode, in {@link #MODES} order
	 * @return the test's figures on each mode, its throughput ratio (io_uring over Epoll) and the ratio of its two
	 *         ratios to its baseline
	 */
	private static ObjectNode compare(Scenario s, List<NettyKVTransport> transports, ReactorBootstrapClient client)
			throws IOException {
		ObjectNode c = JSON.createObjectNode();
		double[] gbps = new double[MODES.length];
		double[] toBaseline = new double[MODES.length];
		int failed = 0;
		for (int m = 0; m < MODES.length; m++) {
			ObjectNode r = s.runner().run(transports.get(2 * m), transports.get(2 * m + 1), client);
			gbps[m] = r.get("gbps").asDouble();
			toBaseline[m] = r.get(s.baselineRatio()).asDouble();
			failed += r.get("failures").asInt();
			String key = MODES[m].label();
			c.put(key + "_gbps", BenchCommand.round(gbps[m]));
			c.put(key + "_ratio_to_baseline", BenchCommand.round(toBaseline[m]));
			c.set(key, r);
		}
		c.put("ratio", gbps[0] == 0 ? 0 : BenchCommand.round(gbps[1] / gbps[0]));
		c.put("baseline_ratio", toBaseline[0] == 0 ? 0 : BenchCommand.round(toBaseline[1] / toBaseline[0]));
		c.put("failures", failed);
		return c;
	}
}
