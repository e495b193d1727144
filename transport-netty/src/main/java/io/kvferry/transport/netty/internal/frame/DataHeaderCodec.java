package io.kvferry.transport.netty.internal.frame;

import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * The 37-byte header of a {@code DATA} frame (and of the same-host {@code DATA_SHM}):
 * <pre>
 * offset 0   i64 room
 * offset 8   u8  kind (RegionKind ordinal: 0 KV, 1 AUX, 2 STATE)
 * offset 9   i32 region      (&gt;= 0)
 * offset 13  i64 dstOffset   (&gt;= 0)
 * offset 21  i32 chunkLen    (&gt;= 0)
 * offset 25  i64 dstStride   (&gt;= 0)
 * offset 33  i32 count       (&gt;= 0)
 * </pre>
 * Data frames carry no {@link io.kvferry.spi.KVMessage}: their payload streams past the decoder, so they are not in
 * {@link ControlFrames}.
 */
public final class DataHeaderCodec {

	private DataHeaderCodec() {
	}

	/** @return 42 bytes: length, type and the header, in a direct buffer the caller owns */
	public static ByteBuf encode(ByteBufAllocator alloc, DataHeader header) {
		int size = KVFrameCodec.FRAME_PREFIX_LENGTH + KVFrameCodec.DATA_HEADER_LENGTH;
		ByteBuf buf = alloc.directBuffer(size, size);
		buf.writeInt(Math.toIntExact(1 + KVFrameCodec.DATA_HEADER_LENGTH + header.payloadLength()));
		buf.writeByte(KVFrameCodec.TYPE_DATA);
		return write(buf, header);
	}

	/** @return {@code buf}, with the 37 header bytes written */
	public static ByteBuf write(ByteBuf buf, DataHeader header) {
		buf.writeLong(header.room());
		buf.writeByte(header.kind().ordinal());
		buf.writeInt(header.region());
		buf.writeLong(header.dstOffset());
		buf.writeInt(header.chunkLen());
		buf.writeLong(header.dstStride());
		buf.writeInt(header.count());
		return buf;
	}

	/** @return the header read from {@code buf}, whose reader index advances past it */
	public static DataHeader read(ByteBuf buf) {
		// A header per data frame: the reader that words a failure is made only for one.
		if (buf.readableBytes() < KVFrameCodec.DATA_HEADER_LENGTH) {
			new FrameReader(buf, "DATA").need(KVFrameCodec.DATA_HEADER_LENGTH, "header");
		}
		long room = buf.readLong();
		int kind = buf.readUnsignedByte();
		int region = buf.readInt();
		long dstOffset = buf.readLong();
		int chunkLen = buf.readInt();
		long dstStride = buf.readLong();
		int count = buf.readInt();
		if (kind > RegionKind.STATE.ordinal()) {
			throw new FrameReader(buf, "DATA").malformed("kind : " + kind + " (expected: 0.."
					+ RegionKind.STATE.ordinal() + ")");
		}
		if (region < 0 || dstOffset < 0 || chunkLen < 0 || dstStride < 0 || count < 0) {
			throw new FrameReader(buf, "DATA").malformed("region=" + region + " dstOffset=" + dstOffset + " chunkLen="
					+ chunkLen + " dstStride=" + dstStride + " count=" + count + " (expected: all >= 0)");
		}
		return new DataHeader(room, RegionKind.fromOrdinal(kind), region, dstOffset, chunkLen, dstStride, count);
	}
}
