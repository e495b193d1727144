package io.kvferry.transport.netty.internal.shm;

import java.nio.charset.StandardCharsets;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * The same-host frames, framed as control frames ({@code u32 length, u8 type, body}):
 * <pre>
 * 0x13 SHM_OFFER   string hostIdentity, string path, 16 bytes nonce, i32 slots, i32 slotSize   (decode to prefill)
 * 0x14 SHM_REPLY   bool accepted, string reason                                               (prefill to decode)
 * 0x21 DATA_SHM    DATA header (37 bytes), i32 slot: the header's payload is in that slot     (prefill to decode)
 * 0x22 SHM_CREDIT  i32 slot: decode copied the slot out, prefill may fill it again            (decode to prefill)
 * </pre>
 * Strings are {@code i32} byte counts and UTF-8. Bodies must be consumed exactly; anything else is a
 * {@link ProtocolException} naming the frame and field.
 */
public final class ShmFrames {

	/** Longest string an offer carries (a host identity, a path). */
	static final int MAX_STRING = 4096;

	private ShmFrames() {
	}

	/** An offer as decoded. */
	public record Offer(String hostIdentity, String path, byte[] nonce, int slots, int slotSize) {
	}

	/** A reply as decoded. */
	public record Reply(boolean accepted, String reason) {
	}

	/** A DATA_SHM frame as decoded: where the payload goes, and the slot it is in. */
	public record SlotData(DataHeader header, int slot) {
	}

	static ByteBuf offer(ByteBufAllocator alloc, String hostIdentity, Ring ring) {
		byte[] host = hostIdentity.getBytes(StandardCharsets.UTF_8);
		byte[] path = ring.path().toString().getBytes(StandardCharsets.UTF_8);
		int body = 4 + host.length + 4 + path.length + Ring.NONCE_BYTES + 8;
		ByteBuf buf = prefix(alloc, KVFrameCodec.TYPE_SHM_OFFER, body);
		buf.writeInt(host.length).writeBytes(host).writeInt(path.length).writeBytes(path).writeBytes(ring.nonce());
		buf.writeInt(ring.slots()).writeInt(ring.slotSize());
		return buf;
	}

	static ByteBuf reply(ByteBufAllocator alloc, boolean accepted, String reason) {
		byte[] r = reason.getBytes(StandardCharsets.UTF_8);
		ByteBuf buf = prefix(alloc, KVFrameCodec.TYPE_SHM_REPLY, 1 + 4 + r.length);
		return buf.writeBoolean(accepted).writeInt(r.length).writeBytes(r);
	}

	static ByteBuf slotData(ByteBufAllocator alloc, DataHeader header, int slot) {
		ByteBuf buf = prefix(alloc, KVFrameCodec.TYPE_DATA_SHM, KVFrameCodec.DATA_HEADER_LENGTH + 4);
		return KVFrameCodec.writeDataHeader(buf, header).writeInt(slot);
	}

	static ByteBuf credit(ByteBufAllocator alloc, int slot) {
		return prefix(alloc, KVFrameCodec.TYPE_SHM_CREDIT, 4).writeInt(slot);
	}

	static Offer decodeOffer(ByteBuf body) {
		String host = string(body, "SHM_OFFER", "hostIdentity");
		String path = string(body, "SHM_OFFER", "path");
		need(body, Ring.NONCE_BYTES + 8, "SHM_OFFER", "nonce, slots, slotSize");
		byte[] nonce = new byte[Ring.NONCE_BYTES];
		body.readBytes(nonce);
		int slots = body.readInt();
		int slotSize = body.readInt();
		end(body, "SHM_OFFER");
		if (slots < 1 || slots > ShmConfig.MAX_SLOTS) {
			throw malformed("SHM_OFFER", "slots : " + slots + " (expected: 1.." + ShmConfig.MAX_SLOTS + ")");
		}
		if (slotSize < ShmConfig.MIN_SLOT_SIZE || slotSize > ShmConfig.MAX_SLOT_SIZE) {
			throw malformed("SHM_OFFER", "slotSize : " + slotSize + " (expected: " + ShmConfig.MIN_SLOT_SIZE + ".."
					+ ShmConfig.MAX_SLOT_SIZE + ")");
		}
		return new Offer(host, path, nonce, slots, slotSize);
	}

	static Reply decodeReply(ByteBuf body) {
		need(body, 1, "SHM_REPLY", "accepted");
		int accepted = body.readUnsignedByte();
		if (accepted > 1) {
			throw malformed("SHM_REPLY", "accepted : " + accepted + " (expected: 0 or 1)");
		}
		String reason = string(body, "SHM_REPLY", "reason");
		end(body, "SHM_REPLY");
		return new Reply(accepted == 1, reason);
	}

	static SlotData decodeSlotData(ByteBuf body) {
		need(body, KVFrameCodec.DATA_HEADER_LENGTH + 4, "DATA_SHM", "header and slot");
		DataHeader header = KVFrameCodec.decodeDataHeader(body);
		int slot = body.readInt();
		end(body, "DATA_SHM");
		return new SlotData(header, slot);
	}

	static int decodeCredit(ByteBuf body) {
		need(body, 4, "SHM_CREDIT", "slot");
		int slot = body.readInt();
		end(body, "SHM_CREDIT");
		return slot;
	}

	private static ByteBuf prefix(ByteBufAllocator alloc, int type, int body) {
		int size = KVFrameCodec.FRAME_PREFIX_LENGTH + body;
		ByteBuf buf = alloc.buffer(size, size);
		return buf.writeInt(1 + body).writeByte(type);
	}

	private static String string(ByteBuf body, String frame, String field) {
		need(body, 4, frame, field);
		int n = body.readInt();
		if (n < 0 || n > MAX_STRING || n > body.readableBytes()) {
			throw malformed(frame, field + " length : " + n + " (expected: 0.." + Math.min(MAX_STRING,
					body.readableBytes()) + ")");
		}
		String s = body.toString(body.readerIndex(), n, StandardCharsets.UTF_8);
		body.skipBytes(n);
		return s;
	}

	private static void need(ByteBuf body, int n, String frame, String field) {
		if (body.readableBytes() < n) {
			throw malformed(frame, "truncated at " + field + " (" + body.readableBytes() + " bytes left, expected: "
					+ n + ")");
		}
	}

	private static void end(ByteBuf body, String frame) {
		if (body.isReadable()) {
			throw malformed(frame, body.readableBytes() + " trailing bytes (expected: none)");
		}
	}

	private static ProtocolException malformed(String frame, String detail) {
		return new ProtocolException("malformed " + frame + " frame: " + detail);
	}
}
