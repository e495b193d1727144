package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;

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
 */
final class IoCompareBench {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration TIMEOUT = Duration.ofMinutes(2);
	private static final IoMode[] MODES = { IoMode.EPOLL, IoMode.IO_URING };

	private IoCompareBench() {
	}

	/** @return the exit status: 0 when every room succeeded with its bytes intact */
	static int run(ModelShape shape, int bulkPages, long bulkBytes, int rounds, int warmup, StripeOptions stripes,
			boolean json, PrintWriter out, PrintWriter err) {
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
			o.put("failures", failures.size());
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
				out.println("  result: " + (failures.isEmpty() ? "OK, every byte matched"
						: failures.size() + " rooms FAILED, first: " + failures.get(0)));
			}
			out.flush();
			return failures.isEmpty() ? 0 : 1;
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
}
