package io.kvferry.transport.netty.internal.frame;

import java.util.List;

import io.kvferry.spi.RegionLayout;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;

/** Lengths and writes of the composite field types ({@code string}, {@code int[]}, {@code region[]}). */
final class Fields {

	/** Bytes of one region: {@code i32 itemLen, i64 itemCount}. */
	static final int REGION_LENGTH = 4 + 8;

	private Fields() {
	}

	static long stringLength(String s) {
		return 4 + (long) ByteBufUtil.utf8Bytes(s);
	}

	static long intsLength(int count) {
		return 4 + 4L * count;
	}

	static long regionsLength(List<RegionLayout> regions) {
		return 4 + (long) REGION_LENGTH * regions.size();
	}

	static void writeString(ByteBuf buf, String s) {
		// Reserving exactly utf8Bytes keeps the exact-capacity frame buffer from growing (writeUtf8 reserves 3 x).
		int length = ByteBufUtil.utf8Bytes(s);
		buf.writeInt(length);
		ByteBufUtil.reserveAndWriteUtf8(buf, s, length);
	}

	static void writeInts(ByteBuf buf, int[] values) {
		buf.writeInt(values.length);
		int bytes = 4 * values.length;
		buf.ensureWritable(bytes);
		if (buf.nioBufferCount() == 1) {
			// A page list can hold millions of entries: one bulk copy instead of a bounds-checked call per entry.
			buf.nioBuffer(buf.writerIndex(), bytes).asIntBuffer().put(values);
			buf.writerIndex(buf.writerIndex() + bytes);
			return;
		}
		for (int v : values) {
			buf.writeInt(v);
		}
	}

	static void writeRegions(ByteBuf buf, List<RegionLayout> regions) {
		buf.writeInt(regions.size());
		for (RegionLayout r : regions) {
			buf.writeInt(r.itemLen());
			buf.writeLong(r.itemCount());
		}
	}
}
