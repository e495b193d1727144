package io.kvferry.test;

import java.util.List;
import java.util.Random;

import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.StateKind;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionLayout;
import io.netty.util.internal.PlatformDependent;

/** Sample values for tests. */
public final class Samples {

	private Samples() {
	}

	/** @return a layout using every field, a non-ASCII dtype, three region lists, CP and state kinds */
	public static PeerLayout layout(int engineRank) {
		return new PeerLayout(engineRank, new ParallelLayout(4, 3, 2, 1, 1, 0, 2, 1, 2, 1), 16, false, "bf16-é", 8, 32,
				16, 1, List.of(new RegionLayout(32768, 1000), new RegionLayout(32768, 1000)),
				List.of(new RegionLayout(4096, 64)),
				List.of(new RegionLayout(1 << 20, RegionLayout.MAX_ITEMS), new RegionLayout(4096, 10)),
				List.of(StateKind.MAMBA, StateKind.SWA), List.of(64, 1), true, false);
	}

	/** @return one message of every type */
	public static List<KVMessage> everyMessage() {
		return List.of(
				new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, layout(3)),
				new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, layout(2), true, 3),
				new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, layout(2), false, 1, 0xfedc_ba98_7654_3210L),
				new KVMessage.HelloAck(new PeerLayout(0, ParallelLayout.SINGLE, 1, true, "", 1, 1, 0, 0, List.of(),
						List.of(), List.of())),
				new KVMessage.HelloAck(layout(1), 0x8000_0000_0000_0001L),
				new KVMessage.HelloAck(layout(1), 7, -2),
				new KVMessage.HelloAck(layout(1), 7, 0x0123_4567_89ab_cdefL, 30_000),
				new KVMessage.Join(-7, Integer.MAX_VALUE),
				new KVMessage.Joined(2),
				new KVMessage.Fence(45, 4L << 30, 0xFFFF_FFFFL),
				new KVMessage.Fence(46, 0, KVMessage.NO_CHECKSUM),
				new KVMessage.Reject("page size 16 != 32 — incompatible"),
				new KVMessage.TransferRequest(Long.MAX_VALUE, new int[] { 0, 7, Integer.MAX_VALUE }, -1,
						new int[] { 3 }, 2, false),
				new KVMessage.TransferRequest(-5, new int[0], 4, new int[0], 1, true),
				new KVMessage.TransferRequest(9, new int[] { 1 }, 0, new int[0], 1, false,
						"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
				new KVMessage.TransferRequest(10, new int[0], 2, new int[] { 5, 6, 7 }, 1, false, "", 4096,
						new int[] { 1, 2 }),
				new KVMessage.Status(42, KVPoll.SUCCESS, 5, ""),
				new KVMessage.Status(43, KVPoll.FAILED, 0, "kv transfer failed: boom"),
				new KVMessage.Status(47, KVPoll.SUCCESS, 2, "", 1L << 20, 0x1234_5678L, 0x86),
				new KVMessage.Abort(44, "decode aborted"),
				new KVMessage.AbortAck(Long.MIN_VALUE),
				new KVMessage.Renew(new long[0]),
				new KVMessage.Renew(new long[] { 1, Long.MIN_VALUE, Long.MAX_VALUE, -1 }),
				new KVMessage.Draining("prefill rank prefill-dp0-tp0-pp0 (10.0.0.5:4000) is draining — bye"),
				new KVMessage.Layout(1, layout(2)),
				new KVMessage.Layout(KVMessage.Layout.MAX_GENERATION, layout(0)));
	}

	/** @return a region of {@code bytes} bytes filled with seeded random data */
	public static MemoryRegion randomRegion(int bytes, long seed) {
		MemoryRegion region = MemoryRegion.allocate(bytes, 1);
		byte[] data = new byte[bytes];
		new Random(seed).nextBytes(data);
		PlatformDependent.copyMemory(data, 0, region.address(), bytes);
		return region;
	}

	/** @return {@code length} bytes at {@code offset} of {@code region} */
	public static byte[] read(MemoryRegion region, long offset, int length) {
		byte[] out = new byte[length];
		PlatformDependent.copyMemory(region.address() + offset, out, 0, length);
		return out;
	}
}
