package io.kvferry.transport.netty.internal.frame;

import io.kvferry.ProtocolException;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * The header of a {@code DATA_SCATTER} frame: many pieces of one room, each written where its entry says.
 * <pre>
 * offset 0        i64 room
 * offset 8        u8  kind (RegionKind ordinal: 0 KV, 1 AUX, 2 STATE)
 * offset 9        i32 pieces n (1..4096)
 * offset 13       n x 16 bytes: i32 region, i64 dstOffset, i32 length
 * offset 13 + 16n the pieces' bytes, one after another in piece order: length - 1 - 13 - 16n bytes in all
 * </pre>
 * The rules a receiver checks before writing a byte are {@link ScatterHeader#validate}'s, then, piece by piece, its
 * grant's, as for a one-chunk {@code DATA} header.
 */
public final class ScatterCodec {

	/** Bytes of the fixed part: room, kind, piece count. */
	public static final int HEAD_LENGTH = 13;
	/** Bytes of one piece's entry. */
	public static final int PIECE_LENGTH = 16;

	private ScatterCodec() {
	}

	/**
	 * Encodes the frame's length, type, fixed part and the entries of pieces {@code from} (inclusive) to {@code to}
	 * (exclusive) of {@code header}; the caller writes those pieces' bytes right after.
	 *
	 * @return a direct buffer the caller owns
	 */
	public static ByteBuf encode(ByteBufAllocator alloc, ScatterHeader header, int from, int to, int payload) {
		int n = to - from;
		int size = KVFrameCodec.FRAME_PREFIX_LENGTH + HEAD_LENGTH + n * PIECE_LENGTH;
		ByteBuf buf = alloc.directBuffer(size, size);
		buf.writeInt(Math.toIntExact(1L + HEAD_LENGTH + (long) n * PIECE_LENGTH + payload));
		buf.writeByte(KVFrameCodec.TYPE_DATA_SCATTER);
		buf.writeLong(header.room());
		buf.writeByte(header.kind().ordinal());
		buf.writeInt(n);
		for (int i = from; i < to; i++) {
			buf.writeInt(header.region(i));
			buf.writeLong(header.dstOffset(i));
			buf.writeInt(header.length(i));
		}
		return buf;
	}

	/**
	 * Reads the piece count of a frame whose fixed part is readable, without moving the reader index, and checks it
	 * against the frame's body before its entries are buffered.
	 *
	 * @param body bytes after the frame's type
	 * @param maxPayload largest payload accepted
	 * @return the piece count
	 * @throws ProtocolException when the count or the payload it leaves is out of bounds
	 */
	public static int count(ByteBuf in, long body, int maxPayload) {
		int n = in.getInt(in.readerIndex() + 9);
		if (n < 1 || n > ScatterHeader.MAX_PIECES) {
			throw malformed("pieces : " + n + " (expected: 1.." + ScatterHeader.MAX_PIECES + ")");
		}
		long payload = body - HEAD_LENGTH - (long) n * PIECE_LENGTH;
		if (payload < n || payload > maxPayload) {
			throw malformed("body of " + body + " bytes leaves " + payload + " payload bytes for " + n + " pieces "
					+ "(expected: " + n + ".." + maxPayload + ")");
		}
		return n;
	}

	/**
	 * Reads the fixed part and {@code n} entries into the given arrays (each at least {@code n} long).
	 *
	 * @return the header, over those arrays
	 */
	public static ScatterHeader read(ByteBuf in, int n, int[] regions, long[] offsets, int[] lengths) {
		long room = in.readLong();
		int kind = in.readUnsignedByte();
		in.skipBytes(4);
		if (kind > RegionKind.STATE.ordinal()) {
			throw malformed("kind : " + kind + " (expected: 0.." + RegionKind.STATE.ordinal() + ")");
		}
		for (int i = 0; i < n; i++) {
			regions[i] = in.readInt();
			offsets[i] = in.readLong();
			lengths[i] = in.readInt();
		}
		return new ScatterHeader(room, RegionKind.fromOrdinal(kind), n, regions, offsets, lengths);
	}

	private static ProtocolException malformed(String detail) {
		return new ProtocolException("malformed DATA_SCATTER frame: " + detail);
	}
}
