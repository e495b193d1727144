package io.kvferry.transport.netty.it;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * Measures whole rooms outside JUnit, for comparing two builds run one after the other:
 * {@code java -cp <test classpath> -Dio.netty.leakDetection.level=disabled
 * io.kvferry.transport.netty.it.RoomHarness small PAGES N} prints the p50 and p90 latency of N rooms of PAGES pages
 * and the process's CPU time per room (Llama-3-8B shape, 1 prefill rank, 1 decode rank, each side its own transport)
 * after a warm-up of 3 s; with {@code -Dsteps=true} also the median time of each traced step after decode opened the
 * room (as precise as the managers' trace clock);
 * {@code many ROOMS REPEATS} runs ROOMS concurrent rooms of 1-4 pages between 2 and 2 ranks (4 layers) REPEATS times
 * and prints GB/s of each; {@code bulk MIB REPEATS} prints GB/s of one room of MIB at a time. Every room's bytes are
 * verified.
 */
public final class RoomHarness {

	private static final Duration T = Duration.ofSeconds(60);

	private RoomHarness() {
	}

	public static void main(String[] args) {
		String mode = args[0];
		int a = Integer.parseInt(args[1]);
		int n = Integer.parseInt(args[2]);
		ModelShape shape = ModelShape.llama3_8b();
		boolean many = mode.equals("many");
		if (many) {
			shape = shape.withLayers(4);
		}
		int tp = many ? 2 : 1;
		long pageBytes = 2L * shape.layers() * shape.itemLen(1);
		int pages = mode.equals("small") ? a : mode.equals("bulk") ? (int) (((long) a << 20) / pageBytes) : 4 * a;
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		NettyKVTransport transport = NettyKVTransport.create();
		NettyKVTransport decodeTransport = NettyKVTransport.create();
		StepClock clock = new StepClock();
		KVCluster cluster = KVCluster.builder().shape(shape).prefill(tp, 1, 1).decode(tp, 1)
				.capacity(Math.max(pages, 8), many ? a + 1 : 64).contiguous(!many).transport(transport)
				.decodeTransport(decodeTransport).bootstrapClient(client).bootstrapAddress(server.address())
				.customize(spec -> Boolean.getBoolean("steps") ? spec.tracer(clock) : spec)
				.startNow(T);
		try {
			Random random = new Random(1);
			long room = 1;
			if (mode.equals("small")) {
				int tokens = pages * shape.pageSize();
				long warmEnd = System.nanoTime() + 3_000_000_000L;
				while (System.nanoTime() < warmEnd) {
					check(cluster.run(room++, tokens, 1, random).block(T));
				}
				long[] lat = new long[n];
				clock.from = room;
				long cpu = processCpuNanos();
				for (int i = 0; i < n; i++) {
					lat[i] = check(cluster.run(room++, tokens, 1, random).block(T)).latencyNanos();
				}
				cpu = processCpuNanos() - cpu;
				Arrays.sort(lat);
				// CPU per room (every thread, the checking of bytes included) moves less than latency on a busy host.
				System.out.printf("small %d pages: p50 %.1f us p90 %.1f us cpu/room %.1f us%n", pages, lat[n / 2] / 1e3,
						lat[n * 9 / 10] / 1e3, cpu / 1e3 / n);
				clock.print();
			}
			else if (mode.equals("bulk")) {
				int tokens = pages * shape.pageSize();
				for (int i = 0; i < n; i++) {
					RoomResult r = check(cluster.run(room++, tokens, 1, random).block(T));
					System.out.printf("bulk %d MiB: %.2f GB/s%n", a, r.bytes() / (double) r.latencyNanos());
				}
			}
			else {
				for (int rep = 0; rep < n; rep++) {
					long base = 1_000_000L * (rep + 1);
					long start = System.nanoTime();
					List<RoomResult> results = Flux.range(0, a)
							.flatMap(i -> cluster.run(base + i, (1 + new Random(i).nextInt(4)) * 16, 1, new Random(i))
									.subscribeOn(Schedulers.parallel()), a)
							.collectList().block(T);
					long elapsed = System.nanoTime() - start;
					long bytes = results.stream().map(RoomHarness::check).mapToLong(RoomResult::bytes).sum();
					System.out.printf("many %d rooms: %.2f GB/s, %.0f rooms/s%n", a, bytes / (double) elapsed,
							a / (elapsed / 1e9));
				}
			}
		}
		finally {
			cluster.close().block(T);
			transport.disposeNow(T);
			decodeTransport.disposeNow(T);
			client.dispose();
			server.disposeNow();
		}
	}

	/** Median time of each traced step after decode opened the room, over the timed rooms. */
	private static final class StepClock implements io.kvferry.RoomTracer {

		final java.util.Map<String, List<Long>> steps = new java.util.concurrent.ConcurrentSkipListMap<>();
		final java.util.Map<Long, Long> opened = new java.util.concurrent.ConcurrentHashMap<>();
		volatile long from = Long.MAX_VALUE;

		@Override
		public io.kvferry.RoomTrace start(io.kvferry.DisaggregationMode side, String manager, long room,
				String parentContext, long startEpochNanos) {
			if (side == io.kvferry.DisaggregationMode.DECODE) {
				opened.put(room, startEpochNanos);
			}
			record(room, side + " start", startEpochNanos);
			return new io.kvferry.RoomTrace() {
				@Override
				public void event(Event event, long value, long epochNanos) {
					record(room, side + " " + event, epochNanos);
				}

				@Override
				public void end(io.kvferry.KVPoll outcome, io.kvferry.FailureCause cause, String reason,
						long epochNanos) {
					record(room, side + " end", epochNanos);
				}
			};
		}

		private void record(long room, String step, long at) {
			Long o = opened.get(room);
			if (room >= from && o != null) {
				steps.computeIfAbsent(step, k -> java.util.Collections.synchronizedList(new java.util.ArrayList<>()))
						.add(at - o);
			}
		}

		void print() {
			steps.entrySet().stream().map(e -> {
				long[] v = e.getValue().stream().mapToLong(Long::longValue).sorted().toArray();
				return new Object[] { v[v.length / 2], e.getKey(), v.length };
			}).sorted((x, y) -> Long.compare((long) x[0], (long) y[0]))
					.forEach(x -> System.out.printf("  %8.1f us  %s (%d)%n", (long) x[0] / 1e3, x[1], x[2]));
		}
	}

	private static long processCpuNanos() {
		return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
				.getOperatingSystemMXBean()).getProcessCpuTime();
	}

	private static RoomResult check(RoomResult r) {
		if (!r.ok()) {
			throw new AssertionError("room " + r.room() + ": " + r.failure());
		}
		return r;
	}
}
