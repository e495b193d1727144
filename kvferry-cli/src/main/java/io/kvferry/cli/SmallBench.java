package io.kvferry.cli;

import java.io.IOException;
import java.time.Duration;
import java.util.Random;
import java.util.function.UnaryOperator;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;

/**
 * The bench's {@code small} rows: 1-page and 8-page rooms' p50 latency against a TCP ping-pong of the same bytes
 * between two blocked threads and against the same ping-pong between two event loops ({@link LoopPingPong}), a room
 * and a round trip of each in turn after a warm-up. A room is timed twice: until both sides completed (prefill learns
 * of decode's Success a trip after decode had every byte) and until decode completed, which is what a ping-pong's
 * round trip is (the asker holds the answer). Both sides' completion is held against the event-loop ping-pong with a
 * verdict ({@link LoopPingPong#withVerdict}), which makes the same three trips as a room and nothing else.
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
	 * @return the small rooms' figures: pages, bytes, p50_us (both sides done), decode_p50_us, baseline_p50_us,
	 *         loop_baseline_p50_us, loop_verdict_p50_us, ratio (p50 over baseline), decode_ratio, loop_ratio (the
	 *         event loops' ping-pong over the blocked threads'), decode_ratio_to_loop, ratio_to_loop_verdict (p50 over
	 *         the event loops' ping-pong with a verdict), and the spreads of ratio, decode_ratio_to_loop and
	 *         ratio_to_loop_verdict
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
		long[] decodeLatencies = new long[smallIterations];
		long[] baselines = new long[smallIterations];
		long[] loopBaselines = new long[smallIterations];
		long[] verdictBaselines = new long[smallIterations];
		CleanableDirectBuffer src = PlatformDependent.allocateDirect(payload);
		CleanableDirectBuffer dst = PlatformDependent.allocateDirect(payload);
		try (TcpBaseline tcp = TcpBaseline.open(); LoopPingPong loop = LoopPingPong.open(src.buffer(), payload);
				LoopPingPong verdict = LoopPingPong.withVerdict(src.buffer(), payload)) {
			TcpBaseline.PingPong pingPong = tcp.pingPong(src.buffer(), payload, WARMUP_ROOMS + smallIterations);
			for (int i = 0; i < WARMUP_ROOMS; i++) {
				pingPong.ping(dst.buffer());
				loop.ping(dst.buffer());
				verdict.ping(dst.buffer());
			}
			// A room, then a round trip of each ping-pong, and so on: all four meet the same machine.
			for (int i = 0; i < smallIterations; i++) {
				StagedRoom staged = pair.stage(room++, tokens, 1, random);
				staged.transfer().block();
				latencies[i] = check.apply(staged.verify()).latencyNanos();
				decodeLatencies[i] = staged.decodeLatencyNanos();
				baselines[i] = pingPong.ping(dst.buffer());
				loopBaselines[i] = loop.ping(dst.buffer());
				verdictBaselines[i] = verdict.ping(dst.buffer());
			}
			pingPong.finish();
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IOException("interrupted while connecting the event-loop ping-pong", e);
		}
		finally {
			src.clean();
			dst.clean();
		}
		double p50 = TcpBaseline.median(latencies) / 1e3;
		double decodeP50 = TcpBaseline.median(decodeLatencies) / 1e3;
		double baseline = TcpBaseline.median(baselines) / 1e3;
		double loopBaseline = TcpBaseline.median(loopBaselines) / 1e3;
		double verdictBaseline = TcpBaseline.median(verdictBaselines) / 1e3;
		ObjectNode o = BenchCommand.JSON.createObjectNode();
		o.put("pages", pages);
		o.put("bytes", payload);
		o.put("p50_us", BenchCommand.round(p50));
		o.put("decode_p50_us", BenchCommand.round(decodeP50));
		o.put("baseline_p50_us", BenchCommand.round(baseline));
		o.put("loop_baseline_p50_us", BenchCommand.round(loopBaseline));
		o.put("loop_verdict_p50_us", BenchCommand.round(verdictBaseline));
		o.put("ratio", BenchCommand.round(p50 / baseline));
		o.set("ratio_spread", RoundSpread.ofLatencies(latencies, baselines, SPREAD_BLOCKS));
		o.put("decode_ratio", BenchCommand.round(decodeP50 / baseline));
		o.put("loop_ratio", BenchCommand.round(loopBaseline / baseline));
		o.put("decode_ratio_to_loop", BenchCommand.round(decodeP50 / loopBaseline));
		o.set("decode_ratio_to_loop_spread", RoundSpread.ofLatencies(decodeLatencies, loopBaselines, SPREAD_BLOCKS));
		o.put("ratio_to_loop_verdict", BenchCommand.round(p50 / verdictBaseline));
		o.set("ratio_to_loop_verdict_spread", RoundSpread.ofLatencies(latencies, verdictBaselines, SPREAD_BLOCKS));
		return o;
	}
}
