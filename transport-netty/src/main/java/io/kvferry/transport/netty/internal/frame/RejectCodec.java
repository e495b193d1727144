package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/** {@code REJECT}: {@code string reason}. */
final class RejectCodec extends ControlCodec<KVMessage.Reject> {

	RejectCodec() {
		super(KVFrameCodec.TYPE_REJECT, "REJECT", KVMessage.Reject.class);
	}

	@Override
	long length(KVMessage.Reject m) {
		return Fields.stringLength(m.reason());
	}

	@Override
	void write(ByteBuf buf, KVMessage.Reject m) {
		Fields.writeString(buf, m.reason());
	}

	@Override
	KVMessage.Reject read(FrameReader r) {
		return new KVMessage.Reject(r.string("reason", KVMessage.MAX_REASON_BYTES));
	}
}
