package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * Rooms back to back over 2 prefill ranks and 2 decode ranks for a bounded time (20 s, or
 * {@code -Dkvferry.soak.seconds=N}), random sizes and chunking, every room checked byte for byte. Memory is sampled at
 * the start, half way and at the end: what the second half adds must not exceed what a flat run allows (no growth with
 * the number of rooms).
 */
class SoakIT {

	private static final Duration RUN = Duration.ofSeconds(Long.getLong("kvferry.soak.seconds", 20));
	private static final int CONCURRENCY = 8;
	private static final int PAGES = 512;
	private static final int MAX_ROOM_PAGES = 48;
	/** 4 layers, 4 KV heads of 64 bf16, page 16: 8 KiB pages per layer buffer on prefill, 4 KiB per decode rank. */
	private static final ModelShape SHAPE = new ModelShape(4, 4, 64, 2, 16, false, 0, 64, 0);
	private static final long MIB = 1 << 20;

	/** Growth allowed in the second half (flat memory plus noise: pool chunks, thread caches, tombstones). */
	private static final long POOLED_SLACK = 16 * MIB;
	private static final long DIRECT_SLACK = 16 * MIB;
	private static final long HEAP_SLACK = 64 * MIB;

	/** Rooms, bytes and failures of a stretch of the run. */
	private static final class Tally {
		final AtomicLong rooms = new AtomicLong();
		final AtomicLong bytes = new AtomicLong();
		final AtomicLong failures = new AtomicLong();
		final AtomicLong corrupted = new AtomicLong();
		final AtomicLong maxLatencyNanos = new AtomicLong();
		volatile String firstFailure;

		void add(RoomResult r) {
			rooms.incrementAndGet();
			bytes.addAndGet(r.bytes());
			maxLatencyNanos.accumulateAndGet(r.latencyNanos(), Math::max);
			if (r.failure() != null) {
				failures.incrementAndGet();
				// KVCluster reports a byte mismatch as "room N: word at 0x... is ..., expected ...".
				if (r.failure().contains(": word at 0x")) {
					corrupted.incrementAndGet();
				}
				if (firstFailure == null) {
					firstFailure = "room " + r.room() + ": " + r.failure();
				}
			}
		}

		@Override
		public String toString() {
			return rooms + " rooms, " + bytes.get() / MIB + " MiB, " + failures + " failures, " + corrupted
					+ " corrupted, max latency " + maxLatencyNanos.get() / 1_000_000 + " ms";
		}
	}

	/** Memory at one instant, after a full collection. */
	private record Snapshot(long heapUsed, long directUsed, long directCount, long pooledDirect, long pooledHeap) {

		static Snapshot take() {
			System.gc();
			BufferPoolMXBean direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
					.filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();
			Runtime rt = Runtime.getRuntime();
			return new Snapshot(rt.totalMemory() - rt.freeMemory(), direct.getMemoryUsed(), direct.getCount(),
					PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory(),
					PooledByteBufAllocator.DEFAULT.metric().usedHeapMemory());
		}

		@Override
		public String toString() {
			return "heap " + heapUsed / MIB + " MiB, JDK direct " + directUsed / MIB + " MiB in " + directCount
					+ " buffers, Netty pooled direct " + pooledDirect / MIB + " MiB, pooled heap " + pooledHeap / MIB
					+ " MiB";
		}
	}

	@Test
	void roomsBackToBackStayByteExactAndMemoryStaysFlat() {
		try (FaultRig rig = FaultRig.start(SHAPE, 2, 2, PAGES, 64, NettyKVTransport.create(),
				UnaryOperator.identity())) {
			AtomicLong nextRoom = new AtomicLong(1);
			// Warm-up: connections, pools and JIT, so that the start snapshot is not the empty state.
			Tally warmUp = run(rig, nextRoom, System.nanoTime() + Duration.ofSeconds(1).toNanos());
			assertThat(warmUp.failures.get()).as(warmUp.firstFailure).isZero();

			Snapshot start = Snapshot.take();
			long t0 = System.nanoTime();
			Tally first = run(rig, nextRoom, t0 + RUN.toNanos() / 2);
			Snapshot middle = Snapshot.take();
			Tally second = run(rig, nextRoom, t0 + RUN.toNanos());
			Snapshot end = Snapshot.take();
			Duration took = Duration.ofNanos(System.nanoTime() - t0);

			System.out.printf("soak %d s over 2<->2 ranks (%d rooms in flight):%n  first half:  %s%n  second half: %s%n"
					+ "  memory at start:  %s%n  memory half way:  %s%n  memory at end:    %s%n", took.toSeconds(),
					CONCURRENCY, first, second, start, middle, end);
			assertThat(first.failures.get()).as(first.firstFailure).isZero();
			assertThat(second.failures.get()).as(second.firstFailure).isZero();
			assertThat(first.corrupted.get() + second.corrupted.get()).isZero();
			assertThat(first.rooms.get()).isPositive();
			assertThat(second.rooms.get()).isPositive();
			assertThat(rig.cluster.freeDecodePages()).as("every page came back").isEqualTo(PAGES);
			assertThat(took).isLessThan(RUN.plusSeconds(60));

			assertThat(end.pooledDirect()).as("Netty pooled direct memory, second half vs first")
					.isLessThanOrEqualTo(Math.max(middle.pooledDirect(), start.pooledDirect()) + POOLED_SLACK);
			assertThat(end.directUsed()).as("JDK direct buffers, second half vs first")
					.isLessThanOrEqualTo(Math.max(middle.directUsed(), start.directUsed()) + DIRECT_SLACK);
			assertThat(end.heapUsed()).as("heap after GC, second half vs first")
					.isLessThanOrEqualTo(Math.max(middle.heapUsed(), start.heapUsed()) + HEAP_SLACK);
			assertThat(middle.pooledDirect()).as("Netty pooled direct memory, first half")
					.isLessThanOrEqualTo(start.pooledDirect() + 4 * POOLED_SLACK);
		}
	}

	/** Runs rooms until {@code deadlineNanos} ({@link System#nanoTime()}), {@link #CONCURRENCY} at a time. */
	private static Tally run(FaultRig rig, AtomicLong nextRoom, long deadlineNanos) {
		Tally tally = new Tally();
		Flux.<Long>generate(sink -> sink.next(nextRoom.getAndIncrement()))
				.takeWhile(id -> System.nanoTime() < deadlineNanos)
				.flatMap(id -> {
					Random random = new Random(id);
					int tokens = 1 + random.nextInt(MAX_ROOM_PAGES * SHAPE.pageSize());
					return rig.cluster.run(id, tokens, 1 + random.nextInt(8), random);
				}, CONCURRENCY)
				.doOnNext(tally::add)
				.then()
				.block(RUN.plusSeconds(60));
		return tally;
	}
}
