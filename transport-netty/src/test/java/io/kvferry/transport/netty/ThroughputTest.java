package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.Samples;
import org.junit.jupiter.api.Test;

/**
 * A quick throughput harness: 256 MiB in 4 MiB contiguous blocks over one loopback connection, from one registered
 * region into another, after a warm-up of the same size. Prints GB/s; asserts only that every byte arrived intact
 * (timing is measured by benchmarks, never asserted). {@code -Dkvferry.throughput.mib=N} changes the volume.
 */
class ThroughputTest {

	private static final int MIB = 1 << 20;
	private static final int BLOCK = 4 * MIB;
	static final int REGION = 64 * MIB;

	@Test
	void movesBulkDataBetweenRegionsAndReportsGigabytesPerSecond() throws Exception {
		long total = Long.getLong("kvferry.throughput.mib", 256) * MIB;
		try (Loopback lo = Loopback.open(NettyKVTransport.create())) {
			MemoryRegion src = Samples.randomRegion(REGION, 31);
			MemoryRegion dst = MemoryRegion.allocate(REGION, 1);
			run(lo, src, dst, total);
			long nanos = run(lo, src, dst, total);
			double gbps = total / (nanos / 1e9) / 1e9;
			System.out.printf("kvferry throughput: %d MiB in %d ms = %.2f GB/s (%s)%n", total / MIB, nanos / 1_000_000,
					gbps, lo.listening);
			assertThat(Samples.read(dst, 0, REGION)).isEqualTo(Samples.read(src, 0, REGION));
		}
	}

	/** Sends {@code total} bytes in 4 MiB blocks cycling over the region; @return nanoseconds until all arrived */
	static long run(Loopback lo, MemoryRegion src, MemoryRegion dst, long total) throws Exception {
		NettyKVTransportTest.Transfer transfer = new NettyKVTransportTest.Transfer(dst, total);
		lo.connectedHandler.sinks = transfer::sink;
		long start = System.nanoTime();
		for (long sent = 0; sent < total; sent += BLOCK) {
			long offset = sent % REGION;
			lo.accepted.send(new DataBlock(new DataHeader(1, RegionKind.KV, 0, offset, BLOCK, BLOCK, 1),
					src.address() + offset, BLOCK));
		}
		transfer.await();
		long nanos = System.nanoTime() - start;
		assertThat(lo.accepted.queuedBytes()).isZero();
		return nanos;
	}
}
