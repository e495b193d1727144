package io.kvferry.internal;

import java.util.List;
import java.util.concurrent.TimeUnit;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The decode write check: every data header passes it before a byte lands. A Llama-3-8B-like rank (64 layer buffers
 * of 32 KiB pages, 4,096 pages each); the room was granted 128 scattered pages.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class WriteGrantBenchmark {

	private static final int ITEM = 32 << 10;
	private static final int PAGES = 4096;
	private static final int BUFFERS = 64;
	// Regions that only describe memory: the check computes addresses and never touches them.
	private static final long BASE = 1L << 40;

	private final KVArgs args = args();
	private final int[] granted = granted();
	private final GrantLedger grant = GrantLedger.of(args, granted, 3, new int[0]);
	// Four granted pages in a row (the grant has runs of four), a head slice of them (16 tokens × 4 pages, 256 bytes
	// each, 2 KiB apart), and a sparse header of one chunk per page, two pages apart.
	private final DataHeader run = kv(granted[8] * (long) ITEM, 4 * ITEM, 0, 1);
	private final DataHeader headSlice = kv(granted[8] * (long) ITEM + 512, 256, 2048, 64);
	private final DataHeader sparse = kv(granted[8] * (long) ITEM, 1024, 2L * ITEM, 2);

	private static KVArgs args() {
		MemoryRegion[] kv = new MemoryRegion[BUFFERS];
		for (int b = 0; b < BUFFERS; b++) {
			kv[b] = MemoryRegion.of(BASE + b * (long) PAGES * ITEM, (long) PAGES * ITEM, ITEM);
		}
		return KVArgs.builder().pageSize(16).kvRegions(List.of(kv))
				.auxRegions(List.of(MemoryRegion.of(BASE << 2, 1024L * 64, 64))).build();
	}

	private static int[] granted() {
		// Runs of four pages, 64 apart, as a page allocator under load hands them out.
		int[] pages = new int[128];
		for (int i = 0; i < pages.length; i++) {
			pages[i] = (i / 4) * 64 + i % 4 + 1;
		}
		return pages;
	}

	private static DataHeader kv(long offset, int chunkLen, long stride, int count) {
		return new DataHeader(7, RegionKind.KV, 33, offset, chunkLen, stride, count);
	}

	/** A contiguous block of four pages: the common header of a room with contiguous pages. */
	@Benchmark
	public long contiguousRun() {
		return grant.destination(run);
	}

	/** A head-sliced block (prefill and decode TP differ): 64 chunks, each checked where it lands. */
	@Benchmark
	public long headSlice() {
		return grant.destination(headSlice);
	}

	/** Chunks more than an item apart, checked one by one. */
	@Benchmark
	public long sparseChunks() {
		return grant.destination(sparse);
	}

	/** Once per room and decode rank: the grant is built from the pages decode asked for. */
	@Benchmark
	public GrantLedger grantOfARoom() {
		return GrantLedger.of(args, granted, 3, new int[0]);
	}
}
