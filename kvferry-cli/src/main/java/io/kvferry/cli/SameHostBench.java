package io.kvferry.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Random;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.SameHost;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;

/**
 * The same-host measurement: one large room 1↔1 through the shared-memory path against a single-thread
 * {@code memcpy} of the same number of bytes (written source, separate destination), and the same room over TCP, in
 * interleaved rounds after a warm-up; medians, with the spread. Prefill and decode have transports of their own, as in
 * two processes.
 */
public final class SameHostBench {

	private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
	private static final int MIN_WARMUP_ROOMS = 10;

	private SameHostBench() {
	}

	/**
	 * The figures of one run: medians over the timed rounds, in GB/s (10^9 bytes per second).
	 *
	 * @param bytes bytes of one room
	 * @param rounds timed rounds of each
	 * @param gbps kvferry through shared memory
	 * @param memcpyGbps one thread copying the same bytes
	 * @param tcpGbps kvferry over TCP loopback, for comparison
	 * @param sharedMemory whether the shared-memory pair really used a ring (false: it fell back to TCP)
	 * @param spread min..max of each, for the record
	 */
	public record Result(long bytes, int rounds, double gbps, double memcpyGbps, double tcpGbps, boolean sharedMemory,
			String spread) {

		/** @return {@link #gbps} / {@link #memcpyGbps} */
		public double ratio() {
			return gbps / memcpyGbps;
		}

		/**
		 * @return the figures as {@code kvferry bench --json} prints them under {@code same_host}: gbps and ratio
		 *         null, with the reason, where the rooms could not go through shared memory here
		 */
		ObjectNode json() {
			ObjectNode o = BenchCommand.JSON.createObjectNode();
			if (sharedMemory) {
				o.put("gbps", BenchCommand.round(gbps));
				o.put("memcpy_gbps", BenchCommand.round(memcpyGbps));
				o.put("ratio", BenchCommand.round(ratio()));
			}
			else {
				o.putNull("gbps");
				o.put("memcpy_gbps", BenchCommand.round(memcpyGbps));
				o.putNull("ratio");
				o.put("missing", "the rooms fell back to TCP (no shared /dev/shm here?)");
			}
			o.put("tcp_gbps", BenchCommand.round(tcpGbps));
			o.put("spread", spread);
			return o;
		}
	}

	/**
	 * Runs the measurement.
	 *
	 * @param shape the model whose pages make the room
	 * @param roomBytes about how many bytes one room moves (whole pages, at least 8)
	 * @param rounds timed rounds of each (interleaved: a shared-memory room, a memcpy, a TCP room)
	 * @param warmup warm-up time of each pair before the timed rounds (at least 10 rooms each)
	 * @param progress where progress lines go, or {@code null}
	 * @return the figures
	 * @throws IOException when a room fails (its bytes did not all arrive or did not match)
	 */
	public static Result run(ModelShape shape, long roomBytes, int rounds, Duration warmup, PrintWriter progress)
			throws IOException {
		long pageBytes = DirectMemory.instanceBytes(shape, 1, 1, 1, 1);
		int pages = (int) Math.max(8, roomBytes / pageBytes);
		long bytes = pages * pageBytes;
		if (bytes > Integer.MAX_VALUE) {
			throw new IllegalArgumentException("roomBytes : " + roomBytes + " (expected: at most 2 GiB)");
		}
		int tokens = pages * shape.pageSize();
		// A bootstrap server per pair: the two clusters register the same ranks.
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		DisposableBootstrapServer tcpServer = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		NettyKVTransport shmPrefill = NettyKVTransport.create().sameHost(SameHost.AUTO);
		NettyKVTransport shmDecode = NettyKVTransport.create().sameHost(SameHost.AUTO);
		NettyKVTransport tcpPrefill = NettyKVTransport.create();
		NettyKVTransport tcpDecode = NettyKVTransport.create();
		CleanableDirectBuffer src = PlatformDependent.allocateDirect((int) bytes);
		CleanableDirectBuffer dst = PlatformDependent.allocateDirect((int) bytes);
		KVCluster shm = null;
		KVCluster tcp = null;
		try {
			shm = pair(shape, pages, shmPrefill, shmDecode, client, server);
			tcp = pair(shape, pages, tcpPrefill, tcpDecode, client, tcpServer);
			long srcAddress = PlatformDependent.directBufferAddress(src.buffer());
			long dstAddress = PlatformDependent.directBufferAddress(dst.buffer());
			Random fill = new Random(3);
			for (long i = 0; i + 8 <= bytes; i += 8) {
				PlatformDependent.putLong(srcAddress + i, fill.nextLong());
			}
			PlatformDependent.copyMemory(srcAddress, dstAddress, bytes);
			Random random = new Random(1);
			long room = 1;
			log(progress, "same-host: " + Sizes.bytes(bytes) + " rooms 1<->1, warm-up " + warmup.toMillis() + " ms each, then " + rounds + " interleaved rounds (shared memory, memcpy, TCP)");
			for (KVCluster pair : new KVCluster[] { shm, tcp }) {
				long end = System.nanoTime() + warmup.toNanos();
				for (int i = 0; i < MIN_WARMUP_ROOMS || System.nanoTime() < end; i++) {
					check(pair.run(room++, tokens, 1, random).block());
				}
			}
			long[] shmNanos = new long[rounds];
			long[] copyNanos = new long[rounds];
			long[] tcpNanos = new long[rounds];
			for (int i = 0; i < rounds; i++) {
				shmNanos[i] = check(shm.run(room++, tokens, 1, random).block()).latencyNanos();
				long t0 = System.nanoTime();
				PlatformDependent.copyMemory(srcAddress, dstAddress, bytes);
				copyNanos[i] = System.nanoTime() - t0;
				tcpNanos[i] = check(tcp.run(room++, tokens, 1, random).block()).latencyNanos();
			}
			boolean used = shmDecode.sameHostConnections() > 0;
			String spread = "shm " + range(bytes, shmNanos) + ", memcpy " + range(bytes, copyNanos) + ", tcp "
					+ range(bytes, tcpNanos) + " GB/s";
			return new Result(bytes, rounds, gbps(bytes, TcpBaseline.median(shmNanos)),
					gbps(bytes, TcpBaseline.median(copyNanos)), gbps(bytes, TcpBaseline.median(tcpNanos)), used,
					spread);
		}
		finally {
			for (KVCluster c : new KVCluster[] { shm, tcp }) {
				if (c != null) {
					Closing.await(c.close(), Closing.TIMEOUT, "the same-host bench's KV managers");
				}
			}
			src.clean();
			dst.clean();
			for (NettyKVTransport t : new NettyKVTransport[] { shmPrefill, shmDecode, tcpPrefill, tcpDecode }) {
				t.dispose();
			}
			client.dispose();
			server.disposeNow();
			tcpServer.disposeNow();
		}
	}

	private static KVCluster pair(ModelShape shape, int pages, NettyKVTransport prefill, NettyKVTransport decode,
			ReactorBootstrapClient client, DisposableBootstrapServer server) {
		return KVCluster.builder().shape(shape).prefill(1, 1, 1).decode(1, 1).capacity(pages, 64).contiguous(true)
				.transport(prefill).decodeTransport(decode).bootstrapClient(client).bootstrapAddress(server.address())
				.startNow(START_TIMEOUT);
	}

	private static RoomResult check(RoomResult r) throws IOException {
		if (!r.ok()) {
			throw new IOException("room " + r.room() + " failed: " + r.failure());
		}
		return r;
	}

	private static double gbps(long bytes, long nanos) {
		return Math.round(bytes / (double) nanos * 100) / 100.0;
	}

	/** @return "min..max" GB/s of the rounds (sorted in place) */
	private static String range(long bytes, long[] nanos) {
		java.util.Arrays.sort(nanos);
		return gbps(bytes, nanos[nanos.length - 1]) + ".." + gbps(bytes, nanos[0]);
	}

	private static void log(PrintWriter progress, String line) {
		if (progress != null) {
			progress.println("kvferry: " + line + " ...");
			progress.flush();
		}
	}
}
