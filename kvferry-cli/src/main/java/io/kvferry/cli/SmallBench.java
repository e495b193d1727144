package io.kvferry.cli;

import java.io.IOException;
import java.time.Duration;
import java.util.Random;
import java.util.function.UnaryOperator;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;

/**
 * The bench's {@code small} rows: 1-page and 8-page rooms' p50 latency against a TCP ping-pong of the same bytes, a
 * room and a round trip in turn after a warm-up.
 */
final class SmallBench {

	private static final int WARMUP_ROOMS = 20;
	// The iterations are cut into this many consecutive blocks to see whether the machine drifted under them.
	private static final int SPREAD_BLOCKS = 5;

	private SmallBench() {
	}

	/**
	 * @param warmup untimed rooms for this long (20 at least) before the timed ones
	 * @param check fails the bench for a room that failed or did not verify
	 * @return the small rooms' figures: pages, bytes, p50_us, baseline_p50_us, ratio
	 */
	static ObjectNode run(KVCluster pair, ModelShape shape, int pages, long pageBytes, int smallIterations,
			Duration warmup, UnaryOperator<RoomResult> check) throws IOException {
		int tokens = pages * shape.pageSize();
		Random random = new Random(pages);
		long room = 2_000_000L * pages;
		// Per-room code runs once a room: it takes a thousand rooms or so before the JIT has compiled it.
		long warmEnd = System.nanoTime() + warmup.toNanos();
		for (int i = 0; i < WARMUP_ROOMS || System.nanoTime() < warmEnd; i++) {
			check.apply(pair.run(room++, tokens, 1, random).block());
		}
		int payload = (int) (pages * pageBytes);
		long[] latencies = new long[smallIterations];
		long[] baselines = new long[smallIterations];
		CleanableDirectBuffer src = PlatformDependent.allocateDirect(payload);
		CleanableDirectBuffer dst = PlatformDependent.allocateDirect(payload);
		try (TcpBaseline tcp = TcpBaseline.open()) {
			TcpBaseline.PingPong pingPong = tcp.pingPong(src.buffer(), payload, WARMUP_ROOMS + smallIterations);
			for (int i = 0; i < WARMUP_ROOMS; i++) {
				pingPong.ping(dst.buffer());
			}
			// A room, then a round trip, and so on: both meet the same machine.
			for (int i = 0; i < smallIterations; i++) {
				latencies[i] = check.apply(pair.run(room++, tokens, 1, random).block()).latencyNanos();
				baselines[i] = pingPong.ping(dst.buffer());
			}
			pingPong.finish();
		}
		finally {
			src.clean();
			dst.clean();
		}
		ObjectNode spread = RoundSpread.ofLatencies(latencies, baselines, SPREAD_BLOCKS);
		double p50 = TcpBaseline.median(latencies) / 1e3;
		double baseline = TcpBaseline.median(baselines) / 1e3;
		ObjectNode o = BenchCommand.JSON.createObjectNode();
		o.put("pages", pages);
		o.put("bytes", payload);
		o.put("p50_us", BenchCommand.round(p50));
		o.put("baseline_p50_us", BenchCommand.round(baseline));
		o.put("ratio", BenchCommand.round(p50 / baseline));
		o.set("ratio_spread", spread);
		return o;
	}
}
