package io.kvferry.transport.netty.internal.frame;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.ProtocolException;
import io.kvferry.spi.RegionLayout;
import io.netty.buffer.ByteBuf;

/**
 * Bounds-checked reads of one frame body; every failure is a {@link ProtocolException} naming the frame and the
 * field. A count is checked against the bytes left before anything is allocated for it, so a lying count costs
 * nothing.
 */
public final class FrameReader {

	private final ByteBuf buf;
	private final String frame;

	/**
	 * @param buf the body; read (its reader index advances), never released
	 * @param frame the frame's name for error messages
	 */
	public FrameReader(ByteBuf buf, String frame) {
		this.buf = buf;
		this.frame = frame;
	}

	/** @return the failure of this frame with {@code detail} */
	public ProtocolException malformed(String detail) {
		return new ProtocolException("malformed " + frame + " frame: " + detail);
	}

	/** Fails unless {@code bytes} bytes remain for {@code field}. */
	public void need(int bytes, String field) {
		if (buf.readableBytes() < bytes) {
			throw malformed(field + " needs " + bytes + " bytes but " + buf.readableBytes()
					+ " remain (truncated body)");
		}
	}

	public int i32(String field) {
		need(4, field);
		return buf.readInt();
	}

	public long i64(String field) {
		need(8, field);
		return buf.readLong();
	}

	public int u8(String field) {
		need(1, field);
		return buf.readUnsignedByte();
	}

	/** @return a byte that must be 0 or 1 */
	public boolean bool(String field) {
		int v = u8(field);
		if (v > 1) {
			throw malformed(field + " : " + v + " (expected: 0 or 1)");
		}
		return v == 1;
	}

	/** Reads a count and checks that {@code count × elementLength} bytes remain, before anything is allocated. */
	public int count(String label, int elementLength) {
		return count(label, elementLength, Integer.MAX_VALUE);
	}

	/**
	 * Reads a count and checks it against {@code limit} and that {@code count × elementLength} bytes remain, before
	 * anything is allocated.
	 */
	public int count(String label, int elementLength, int limit) {
		int n = i32(label);
		long max = Math.min(limit, buf.readableBytes() / elementLength);
		if (n < 0 || n > max) {
			throw malformed(label + " : " + n + " (expected: 0.." + max + ")");
		}
		return n;
	}

	/** @return a {@code string} of at most {@code maxBytes}: a byte count, then that many bytes of UTF-8 */
	public String string(String field, int maxBytes) {
		return utf8(count(field + " length", 1, maxBytes));
	}

	/** @return the next {@code n} bytes as UTF-8 (malformed sequences become U+FFFD); the caller checked they remain */
	public String utf8(int n) {
		String s = buf.toString(buf.readerIndex(), n, StandardCharsets.UTF_8);
		buf.skipBytes(n);
		return s;
	}

	/** @return an {@code int[]}: a count, then that many {@code i32} */
	public int[] ints(String field) {
		return ints(field, Integer.MAX_VALUE);
	}

	/** @return an {@code int[]} of at most {@code limit} values: a count, then that many {@code i32} */
	public int[] ints(String field, int limit) {
		int n = count(field + " count", 4, limit);
		int[] values = new int[n];
		buf.nioBuffer(buf.readerIndex(), 4 * n).asIntBuffer().get(values);
		buf.skipBytes(4 * n);
		return values;
	}

	/** @return a {@code region[]} of at most {@code limit}: a count, then {@code i32 itemLen, i64 itemCount} each */
	public List<RegionLayout> regions(String field, int limit) {
		int n = count(field + " count", Fields.REGION_LENGTH, limit);
		List<RegionLayout> regions = new ArrayList<>(n);
		for (int i = 0; i < n; i++) {
			regions.add(new RegionLayout(buf.readInt(), buf.readLong()));
		}
		return regions;
	}

	/** @return exactly {@code length} bytes */
	public byte[] bytes(String field, int length) {
		need(length, field);
		byte[] b = new byte[length];
		buf.readBytes(b);
		return b;
	}

	/** Fails when bytes remain: a body is consumed exactly. */
	public void end() {
		if (buf.isReadable()) {
			throw malformed(buf.readableBytes() + " trailing bytes after the last field");
		}
	}
}
