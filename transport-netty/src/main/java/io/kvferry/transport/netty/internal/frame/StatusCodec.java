package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.KVPoll;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/**
 * {@code STATUS}: {@code i64 room, u8 status (KVPoll code), i32 prefillRank, string reason, i64 bytes,
 * i64 checksum, u8 fences, u8 code (a failure code, 0 on Success), i32 retryAfterMillis}.
 */
final class StatusCodec extends ControlCodec<KVMessage.Status> {

	StatusCodec() {
		super(KVFrameCodec.TYPE_STATUS, "STATUS", KVMessage.Status.class);
	}

	@Override
	long length(KVMessage.Status s) {
		return 8 + 1 + 4 + Fields.stringLength(s.reason()) + 8 + 8 + 1 + 1 + 4;
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
		buf.writeByte(s.code());
		buf.writeInt(s.retryAfterMillis());
	}

	@Override
	KVMessage.Status read(FrameReader r) {
		long room = r.i64("room");
		KVPoll status = KVPoll.fromCode(r.u8("status"));
		int rank = r.i32("prefillRank");
		String reason = r.string("reason", KVMessage.MAX_REASON_BYTES);
		long bytes = r.i64("bytes");
		long checksum = r.i64("checksum");
		int fences = r.u8("fences");
		int code = r.u8("code");
		return new KVMessage.Status(room, status, rank, reason, bytes, checksum, fences, code,
				r.i32("retryAfterMillis"));
	}
}
