package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/** {@code ABORT}: {@code i64 room, string reason}. */
final class AbortCodec extends ControlCodec<KVMessage.Abort> {

	AbortCodec() {
		super(KVFrameCodec.TYPE_ABORT, "ABORT", KVMessage.Abort.class);
	}

	@Override
	long length(KVMessage.Abort a) {
		return 8 + Fields.stringLength(a.reason());
	}

	@Override
	void write(ByteBuf buf, KVMessage.Abort a) {
		buf.writeLong(a.room());
		Fields.writeString(buf, a.reason());
	}

	@Override
	KVMessage.Abort read(FrameReader r) {
		long room = r.i64("room");
		return new KVMessage.Abort(room, r.string("reason"));
	}
}
