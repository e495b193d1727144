package io.kvferry.transport.netty;

import io.kvferry.MemoryRegion;
import io.kvferry.test.Samples;

/**
 * Measures bulk throughput outside JUnit (whose leak guard forces paranoid leak detection, which slows every buffer
 * access): {@code java -cp <test classpath> -Dio.netty.leakDetection.level=disabled
 * io.kvferry.transport.netty.ThroughputHarness [MiB] [rounds] [tls]}. Moves the volume in 4 MiB contiguous blocks
 * between two regions over one loopback connection, prints GB/s per round and checks the bytes. With {@code tls} the
 * connection runs inside TLS (JDK provider, the test's self-signed certificate).
 */
public final class ThroughputHarness {

	private static final int MIB = 1 << 20;
	private static final int REGION = ThroughputTest.REGION;

	private ThroughputHarness() {
	}

	public static void main(String[] args) throws Exception {
		long total = (args.length > 0 ? Long.parseLong(args[0]) : 256) * MIB;
		int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
		boolean tls = args.length > 2 && args[2].equals("tls");
		NettyKVTransport transport = NettyKVTransport.create();
		try (Loopback lo = Loopback.open(tls ? transport.secure(TestTls.server(), TestTls.client()) : transport)) {
			MemoryRegion src = Samples.randomRegion(REGION, 31);
			MemoryRegion dst = MemoryRegion.allocate(REGION, 1);
			System.out.println(lo.listening);
			for (int r = 0; r < rounds; r++) {
				long nanos = ThroughputTest.run(lo, src, dst, total);
				System.out.printf("round %d: %d MiB in %d ms = %.2f GB/s%n", r, total / MIB, nanos / 1_000_000,
						total / (nanos / 1e9) / 1e9);
			}
			if (!java.util.Arrays.equals(Samples.read(dst, 0, REGION), Samples.read(src, 0, REGION))) {
				throw new AssertionError("destination differs from source");
			}
		}
	}
}
