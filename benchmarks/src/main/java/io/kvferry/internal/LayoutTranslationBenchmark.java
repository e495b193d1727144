package io.kvferry.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.kvferry.KVArgs;
import io.kvferry.KVLayout;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.SendGate;
import io.netty.util.internal.PlatformDependent;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * What re-laying KV pages between layouts costs: prefill's plan for one chunk of 128 pages of 16 tokens of one layer
 * (K and V, 8 KV heads of 128 bf16 values: 32 KiB a page, 8 MiB in all), each planned block copied chunk by chunk from
 * prefill's pages into decode's, as a transport gathers a strided block and decode lands it. {@code NHD>NHD} moves
 * whole pages; {@code NHD>HND} and {@code HND>NHD} move one strided block per head and page (16 chunks of 256 bytes).
 * Throughput is in room chunks (of 8 MiB) per second; the difference in time per byte from {@code NHD>NHD} is
 * what the translation costs.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class LayoutTranslationBenchmark {

	private static final int PAGES = 128;
	private static final int PAGE_SIZE = 16;
	private static final int HEADS = 8;
	private static final int ITEM = PAGE_SIZE * HEADS * 128 * 2;

	@Param({ "NHD>NHD", "NHD>HND", "HND>NHD" })
	public String layouts;

	private TransferPlan plan;
	private List<MemoryRegion> decode;
	private int[] srcPages;
	private int[] dstPages;
	private BlockOutlet outlet;

	@Setup
	public void setUp() {
		KVLayout from = KVLayout.valueOf(layouts.substring(0, 3));
		KVLayout to = KVLayout.valueOf(layouts.substring(4));
		List<MemoryRegion> prefill = regions();
		decode = regions();
		for (MemoryRegion r : prefill) {
			for (long off = 0; off < r.length(); off += Long.BYTES) {
				PlatformDependent.putLong(r.address() + off, off * 0x9E3779B97F4A7C15L);
			}
		}
		plan = TransferPlan.of(args(prefill, from), ParallelLayout.SINGLE,
				PeerLayout.of(args(decode, to), ParallelLayout.SINGLE));
		srcPages = new int[PAGES];
		dstPages = new int[PAGES];
		for (int i = 0; i < PAGES; i++) {
			srcPages[i] = i;
			// Decode's pages scattered, as a paged pool hands them out.
			dstPages[i] = (i * 37) % PAGES;
		}
		outlet = new BlockOutlet() {
			@Override
			public void send(DataBlock block) {
				DataHeader h = block.header();
				long dst = decode.get(h.region()).address() + h.dstOffset();
				for (int i = 0; i < h.count(); i++) {
					PlatformDependent.copyMemory(block.srcAddress() + i * block.srcStride(), dst + i * h.dstStride(),
							h.chunkLen());
				}
			}

			@Override
			public SendGate gate() {
				return SendGate.OPEN;
			}
		};
	}

	private static List<MemoryRegion> regions() {
		List<MemoryRegion> kv = new ArrayList<>();
		kv.add(MemoryRegion.allocate(PAGES, ITEM));
		kv.add(MemoryRegion.allocate(PAGES, ITEM));
		return kv;
	}

	private static KVArgs args(List<MemoryRegion> kv, KVLayout layout) {
		return KVArgs.builder().pageSize(PAGE_SIZE).kvHeads(HEADS, HEADS).kvRegions(kv).kvLayout(layout).build();
	}

	/** One chunk of one layer, planned and copied into decode's pages in decode's layout. */
	@Benchmark
	public long relay() {
		return plan.sendKv(outlet, 1, srcPages, dstPages);
	}
}
