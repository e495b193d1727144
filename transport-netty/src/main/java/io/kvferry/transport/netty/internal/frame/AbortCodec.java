package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/** {@code ABORT}: {@code i64 room, string reason, u8 code, i32 retryAfterMillis}. */
final class AbortCodec extends ControlCodec<KVMessage.Abort> {

	AbortCodec() {
		super(KVFrameCodec.TYPE_ABORT, "ABORT", KVMessage.Abort.class);
	}

	@Override
	long length(KVMessage.Abort a) {
		return 8 + Fields.stringLength(a.reason()) + 1 + 4;
	}

	@Override
	void write(ByteBuf buf, KVMessage.Abort a) {
		buf.writeLong(a.room());
		Fields.writeString(buf, a.reason());
		buf.writeByte(a.code());
		buf.writeInt(a.retryAfterMillis());
	}

	@Override
	KVMessage.Abort read(FrameReader r) {
		long room = r.i64("room");
		String reason = r.string("reason", KVMessage.MAX_REASON_BYTES);
		int code = r.u8("code");
		return new KVMessage.Abort(room, reason, code, r.i32("retryAfterMillis"));
	}
}
