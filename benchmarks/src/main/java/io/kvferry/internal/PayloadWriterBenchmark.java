package io.kvferry.internal;

import java.util.concurrent.TimeUnit;

import io.kvferry.MemoryRegion;
import io.kvferry.internal.stripe.Tally;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Landing a data frame's payload in registered memory: a 64 KiB block copied from a received segment (contiguous, or
 * head-sliced into 256-byte chunks 1 KiB apart), or read in place through the landing zone, with and without the
 * CRC32C that decode takes when it asked for checksums. Throughput is in payloads per second; × 64 KiB is bytes.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class PayloadWriterBenchmark {

	private static final int PAYLOAD = 64 << 10;
	private static final int CHUNK = 256;
	private static final int STRIDE = 1024;

	@Param({ "false", "true" })
	public boolean checksum;

	private MemoryRegion region;
	private ByteBuf segment;
	private DataHeader contiguous;
	private DataHeader strided;
	private long completed;

	@Setup
	public void setUp() {
		region = MemoryRegion.allocate(PAYLOAD / CHUNK * STRIDE / 4096, 4096);
		segment = Unpooled.directBuffer(PAYLOAD);
		for (int i = 0; i < PAYLOAD; i += Long.BYTES) {
			segment.writeLong(i * 0x9E3779B97F4A7C15L);
		}
		contiguous = new DataHeader(1, RegionKind.KV, 0, 0, PAYLOAD, 0, 1);
		strided = new DataHeader(1, RegionKind.KV, 0, 0, CHUNK, STRIDE, PAYLOAD / CHUNK);
	}

	@TearDown
	public void tearDown() {
		segment.release();
	}

	private PayloadWriter writer(DataHeader h) {
		return PayloadWriter.of(region.address(), h, () -> true, new Tally(checksum), (w, n) -> completed += n);
	}

	/** A contiguous block copied from a segment the transport received. */
	@Benchmark
	public long copyContiguous() {
		PayloadWriter w = writer(contiguous);
		w.write(segment);
		w.complete();
		return completed;
	}

	/** A head-sliced block: the copy is cut at every chunk. */
	@Benchmark
	public long copyStrided() {
		PayloadWriter w = writer(strided);
		w.write(segment);
		w.complete();
		return completed;
	}

	/** The transport read straight into the landing zone: no copy, only the bookkeeping (and the checksum). */
	@Benchmark
	public long landInPlace() {
		PayloadWriter w = writer(contiguous);
		ByteBuf zone = w.landingZone(1, PAYLOAD);
		int n = zone.capacity();
		zone.release();
		w.landed(n);
		w.complete();
		return completed;
	}
}
