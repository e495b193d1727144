package io.kvferry.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.RoomPriority;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * {@code kvferry bench --small-under-bulk}: how long a 1-page room takes while a large room is in flight between the
 * same two ranks, against the same room alone. One 1↔1 pair over loopback; each round times {@link #SMALL_ROOMS}
 * 1-page rooms one after another with nothing else moving, then starts the large room and times 1-page rooms one
 * after another as long as it moves (a room started then counts with all the time it waited behind it), NORMAL and
 * {@link RoomPriority#HIGH} rooms in turn. Every room's bytes are checked after its clock stopped.
 */
final class SmallUnderBulkBench {

	static final int SMALL_ROOMS = 20;
	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration TIMEOUT = Duration.ofMinutes(2);

	private SmallUnderBulkBench() {
	}

	/** @return the exit status: 0 when every room succeeded with its bytes intact */
	static int run(ModelShape shape, int bulkPages, long bulkBytes, int rounds, StripeOptions stripes, boolean json,
			PrintWriter out, PrintWriter err) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		NettyKVTransport prefillTransport = NettyKVTransport.create();
		NettyKVTransport decodeTransport = NettyKVTransport.create();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		KVCluster pair = null;
		try {
			pair = KVCluster.builder().shape(shape).prefill(1, 1, 1).decode(1, 1)
					.capacity(bulkPages + 2 * SMALL_ROOMS, 4 * SMALL_ROOMS).contiguous(true)
					.transport(prefillTransport).decodeTransport(decodeTransport).bootstrapClient(client)
					.customize(spec -> stripes.apply(spec.callbackScheduler(Schedulers.immediate())))
					.bootstrapAddress(server.address()).startNow(TIMEOUT);
			List<Long> alone = new ArrayList<>();
			List<Long> underBulk = new ArrayList<>();
			List<Long> underBulkHigh = new ArrayList<>();
			List<String> failures = new ArrayList<>();
			Random random = new Random(11);
			long room = 1;
			long bulkNanos = 0;
			// Round 0 warms up and is not counted.
			for (int i = 0; i <= rounds; i++) {
				for (int k = 0; k < SMALL_ROOMS; k++) {
					RoomResult r = BenchCommand.check(failures, pair.run(room++, shape.pageSize(), 1, random)
							.block(TIMEOUT));
					if (i > 0 && r.ok()) {
						alone.add(r.latencyNanos());
					}
				}
				StagedRoom bulk = pair.stage(room++, bulkPages * shape.pageSize(), 1, random);
				long start = System.nanoTime();
				var inFlight = bulk.transfer().subscribeOn(Schedulers.parallel()).toFuture();
				int timed = 0;
				// Every room started while the large one moves counts, however long it then waits behind it. NORMAL
				// and HIGH rooms take turns, so that both meet the large room at every stage of it.
				while (!inFlight.isDone() && timed < 10 * SMALL_ROOMS) {
					boolean high = (room & 1) == 0;
					RoomResult r = BenchCommand.check(failures, pair.run(room++, shape.pageSize(), 1, random,
							high ? RoomPriority.HIGH : RoomPriority.NORMAL).block(TIMEOUT));
					if (i > 0 && r.ok()) {
						(high ? underBulkHigh : underBulk).add(r.latencyNanos());
						timed++;
					}
				}
				Mono.fromFuture(inFlight).block(TIMEOUT);
				if (i > 0) {
					bulkNanos += System.nanoTime() - start;
				}
				BenchCommand.check(failures, bulk.verify());
				if (!json) {
					err.printf(Locale.ROOT, "kvferry bench: small under bulk round %d: %d rooms timed under the large"
							+ " room%n", i, timed);
					err.flush();
				}
			}
			double aloneUs = median(alone) / 1e3;
			double underUs = median(underBulk) / 1e3;
			double highUs = median(underBulkHigh) / 1e3;
			ObjectNode o = JSON.createObjectNode();
			o.put("bulk_bytes", bulkBytes);
			o.put("rounds", rounds);
			o.put("alone_p50_us", round(aloneUs));
			o.put("under_bulk_p50_us", round(underUs));
			o.put("under_bulk_rooms", underBulk.size());
			o.put("ratio", aloneUs == 0 ? 0 : round(underUs / aloneUs));
			o.put("under_bulk_high_p50_us", round(highUs));
			o.put("under_bulk_high_rooms", underBulkHigh.size());
			o.put("high_ratio", aloneUs == 0 ? 0 : round(highUs / aloneUs));
			o.put("bulk_ms", rounds == 0 ? 0 : round(bulkNanos / 1e6 / rounds));
			o.put("failures", failures.size());
			if (json) {
				out.println(o);
			}
			else {
				out.printf(Locale.ROOT, "kvferry bench --small-under-bulk: %d rounds, 1<->1 loopback over %d stripe(s), "
						+ "a %s room in flight, %s%n", rounds, stripes.stripes, Sizes.bytes(bulkBytes),
						ModelOptions.describe(shape));
				out.printf(Locale.ROOT, "  1-page room alone:            p50 %,.0f us%n", aloneUs);
				out.printf(Locale.ROOT, "  1-page room under the large:  p50 %,.0f us (%d rooms, %.1fx)%n", underUs,
						underBulk.size(), aloneUs == 0 ? 0 : underUs / aloneUs);
				out.printf(Locale.ROOT, "  the same, RoomPriority.HIGH:  p50 %,.0f us (%d rooms, %.1fx)%n", highUs,
						underBulkHigh.size(), aloneUs == 0 ? 0 : highUs / aloneUs);
				out.println("  result: " + (failures.isEmpty() ? "OK, every room succeeded intact"
						: failures.size() + " rooms FAILED, first: " + failures.get(0)));
			}
			out.flush();
			return failures.isEmpty() ? 0 : 1;
		}
		finally {
			if (pair != null) {
				pair.close().block(TIMEOUT);
			}
			prefillTransport.disposeNow(TIMEOUT);
			decodeTransport.disposeNow(TIMEOUT);
			client.dispose();
			server.disposeNow();
		}
	}

	static double median(List<Long> values) {
		if (values.isEmpty()) {
			return 0;
		}
		List<Long> sorted = new ArrayList<>(values);
		sorted.sort(null);
		int n = sorted.size();
		return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2.0;
	}

	private static double round(double v) {
		return Math.round(v * 10) / 10.0;
	}
}
