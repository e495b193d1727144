package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.KVPoll;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/**
 * {@code STATUS}: {@code i64 room, u8 status (KVPoll code), i32 prefillRank, string reason, i64 bytes,
 * i64 checksum, u8 fences}.
 */
final class StatusCodec extends ControlCodec<KVMessage.Status> {

	StatusCodec() {
		super(KVFrameCodec.TYPE_STATUS, "STATUS", KVMessage.Status.class);
	}

	@Override
	long length(KVMessage.Status s) {
		return 8 + 1 + 4 + Fields.stringLength(s.reason()) + 8 + 8 + 1;
	}

	@Override
	void write(ByteBuf buf, KVMessage.Status s) {
		buf.writeLong(s.room());
		buf.writeByte(s.status().code());
		buf.writeInt(s.prefillRank());
		Fields.writeString(buf, s.reason());
		buf.writeLong(s.bytes());
		buf.writeLong(s.checksum());
		buf.writeByte(s.fences());
	}

	@Override
	KVMessage.Status read(FrameReader r) {
		long room = r.i64("room");
		KVPoll status = KVPoll.fromCode(r.u8("status"));
		int rank = r.i32("prefillRank");
		String reason = r.string("reason");
		long bytes = r.i64("bytes");
		long checksum = r.i64("checksum");
		return new KVMessage.Status(room, status, rank, reason, bytes, checksum, r.u8("fences"));
	}
}
