package io.kvferry.cli;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Random;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;
import reactor.core.scheduler.Schedulers;

/**
 * The bench's {@code bulk} scenario, and the {@code small} rows on the same pair of ranks: one large room 1&lt;-&gt;1
 * against a TCP pump of the same bytes (one connection), a two-connection {@code SO_RCVLOWAT} pump and the cache-hot
 * 1 MiB ring (the wire's ceiling), in interleaved rounds after a warm-up of all; then small rooms against a TCP
 * ping-pong ({@link SmallBench}).
 */
final class BulkBench implements BenchScenario {

	private final int pages;
	private final long bytes;
	private final int rounds;
	private final int warmup;
	private final int smallIterations;
	private final Duration smallWarmup;
	private final int[] smallPages;
	private final StripeOptions stripes;
	private final List<String> failures;

	/**
	 * @param pages pages of the bulk room
	 * @param bytes its bytes
	 * @param rounds timed rounds of each side
	 * @param warmup bulk rooms (and pump rounds) before the timed ones
	 * @param smallIterations timed small rooms of each size
	 * @param smallWarmup untimed small rooms of each size for this long before the timed ones
	 * @param smallPages the small rooms' sizes, in pages (none: no small rows)
	 * @param failures where a failed room is told
	 */
	BulkBench(int pages, long bytes, int rounds, int warmup, int smallIterations, Duration smallWarmup,
			int[] smallPages, StripeOptions stripes, List<String> failures) {
		this.pages = pages;
		this.bytes = bytes;
		this.rounds = rounds;
		this.warmup = warmup;
		this.smallIterations = smallIterations;
		this.smallWarmup = smallWarmup;
		this.smallPages = smallPages.clone();
		this.stripes = stripes;
		this.failures = failures;
	}

	@Override
	public void run(Run run, ObjectNode row) throws IOException {
		ModelShape shape = run.shape();
		KVCluster pair = KVCluster.builder().shape(shape).prefill(1, 1, 1).decode(1, 1)
				.capacity(pages, 64).contiguous(true).transport(run.prefill()).decodeTransport(run.decode())
				// A room's latency ends where its last completion is signalled, as an engine polling poll() sees
				// it, not after a hop to a callback worker: the harness only stamps the time there.
				.customize(spec -> stripes.apply(spec.callbackScheduler(Schedulers.immediate())))
				.bootstrapClient(run.client())
				.bootstrapAddress(run.bootstrap()).startNow(BenchCommand.START_TIMEOUT);
		try {
			bulk(pair, shape, row);
			for (int n : smallPages) {
				row.set(n == 1 ? "small" : "small_" + n, SmallBench.run(pair, shape, n, bytes / pages,
						smallIterations, smallWarmup, this::check));
			}
		}
		finally {
			BenchCommand.close(pair.close(), "bulk over " + run.prefill().getClass().getSimpleName(), failures);
		}
	}

	/**
	 * kvferry's bulk room against the pumps, in interleaved rounds after a warm-up of both: kvferry, the fair pump
	 * (one connection, a source written before each round as kvferry's pages are), the strongest simple pump (two
	 * connections, {@code SO_RCVLOWAT}) and the cache-hot ring (the loopback ceiling). Medians count; best-of is shown
	 * beside.
	 */
	private void bulk(KVCluster pair, ModelShape shape, ObjectNode result) throws IOException {
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
			for (int i = 0; i < warmup; i++) {
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
				// The allocation window holds the room's transfer only, as its clock does: staging the room (its pages
				// and their pattern) and checking its bytes are the harness's work, not the room's.
				StagedRoom staged = pair.stage(room++, tokens, 1, random);
				long before = BenchCommand.allocatedBytes();
				staged.transfer().block();
				allocated += BenchCommand.allocatedBytes() - before;
				RoomResult r = check(staged.verify());
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
		bulk.put("warmup_rooms", warmup);
		bulk.put("gbps", BenchCommand.round(gbps));
		bulk.put("best_gbps", BenchCommand.round(gbps(bytes, min(kvferry))));
		bulk.put("worst_gbps", BenchCommand.round(gbps(bytes, max(kvferry))));
		bulk.put("baseline_gbps", BenchCommand.round(baseline));
		bulk.put("baseline_best_gbps", BenchCommand.round(gbps(bytes, min(pump))));
		bulk.put("ratio", BenchCommand.round(gbps / baseline));
		bulk.set("ratio_spread", RoundSpread.ofRatesTimed(kvferry, pump));
		if (lowatMissing == null) {
			double baseline2 = gbps(bytes, TcpBaseline.median(pump2.clone()));
			bulk.put("baseline2_gbps", BenchCommand.round(baseline2));
			bulk.put("baseline2_best_gbps", BenchCommand.round(gbps(bytes, min(pump2))));
			bulk.put("ratio2", BenchCommand.round(gbps / baseline2));
			bulk.set("ratio2_spread", RoundSpread.ofRatesTimed(kvferry, pump2));
		}
		else {
			bulk.putNull("baseline2_gbps");
			bulk.putNull("ratio2");
			bulk.put("baseline2_missing", "two-stream SO_RCVLOWAT pump: " + lowatMissing);
		}
		bulk.put("wire_gbps", BenchCommand.round(wire));
		bulk.put("wire_ratio", BenchCommand.round(gbps / wire));
		result.put("alloc_bytes_per_mb", moved == 0 ? 0 : Math.round(allocated / (moved / 1e6)));
	}

	private RoomResult check(RoomResult r) {
		return BenchCommand.check(failures, r);
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

	private static long max(long[] values) {
		long m = 0;
		for (long v : values) {
			m = Math.max(m, v);
		}
		return m;
	}
}
