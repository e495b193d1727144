package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.RoomClaim;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.netty.buffer.ByteBuf;

/**
 * {@code TRANSFER_REQUEST}: {@code i64 room, int[] dstPages, i32 auxIndex, int[] stateIndices,
 * i32 requiredDstInfoNum, bool dummy, string traceContext, i32 decodePrefixLen, int[] stateCounts, claim proof,
 * claim handoff}, each claim part a {@code u8} count of 0 or 32 and that many bytes.
 */
final class TransferRequestCodec extends ControlCodec<KVMessage.TransferRequest> {

	TransferRequestCodec() {
		super(KVFrameCodec.TYPE_TRANSFER_REQUEST, "TRANSFER_REQUEST", KVMessage.TransferRequest.class);
	}

	@Override
	long length(KVMessage.TransferRequest t) {
		return 8 + Fields.intsLength(t.dstPages().length) + 4 + Fields.intsLength(t.stateIndices().length) + 4 + 1
				+ Fields.stringLength(t.traceContext()) + 4 + Fields.intsLength(t.stateCounts().length) + 1
				+ t.claim().proof().length + 1 + t.claim().handoff().length;
	}

	@Override
	void write(ByteBuf buf, KVMessage.TransferRequest t) {
		buf.writeLong(t.room());
		Fields.writeInts(buf, t.dstPages());
		buf.writeInt(t.auxIndex());
		Fields.writeInts(buf, t.stateIndices());
		buf.writeInt(t.requiredDstInfoNum());
		buf.writeBoolean(t.dummy());
		Fields.writeString(buf, t.traceContext());
		buf.writeInt(t.decodePrefixLen());
		Fields.writeInts(buf, t.stateCounts());
		writeClaimPart(buf, t.claim().proof());
		writeClaimPart(buf, t.claim().handoff());
	}

	private static void writeClaimPart(ByteBuf buf, byte[] part) {
		buf.writeByte(part.length);
		buf.writeBytes(part);
	}

	/** @return one part of a claim: none, or exactly {@link RoomClaim#BYTES} bytes; any other count is malformed */
	private static byte[] readClaimPart(FrameReader r, String field) {
		int n = r.u8(field);
		if (n != 0 && n != RoomClaim.BYTES) {
			throw r.malformed(field + " : " + n + " bytes (expected: 0 or " + RoomClaim.BYTES + ")");
		}
		return r.bytes(field, n);
	}

	@Override
	KVMessage.TransferRequest read(FrameReader r) {
		long room = r.i64("room");
		int[] dstPages = r.ints("dstPages");
		int auxIndex = r.i32("auxIndex");
		int[] stateIndices = r.ints("stateIndices");
		int required = r.i32("requiredDstInfoNum");
		boolean dummy = r.bool("dummy");
		String traceContext = r.string("traceContext", KVMessage.TransferRequest.MAX_TRACE_CONTEXT_BYTES);
		int prefix = r.i32("decodePrefixLen");
		int[] stateCounts = r.ints("stateCounts", PeerLayout.MAX_REGIONS);
		RoomClaim claim = new RoomClaim(readClaimPart(r, "claimProof"), readClaimPart(r, "claimHandoff"));
		return new KVMessage.TransferRequest(room, dstPages, auxIndex, stateIndices, required, dummy, traceContext,
				prefix, stateCounts, claim);
	}
}
