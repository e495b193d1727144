package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/** {@code DRAINING}: {@code string reason}. */
final class DrainingCodec extends ControlCodec<KVMessage.Draining> {

	DrainingCodec() {
		super(KVFrameCodec.TYPE_DRAINING, "DRAINING", KVMessage.Draining.class);
	}

	@Override
	long length(KVMessage.Draining d) {
		return Fields.stringLength(d.reason());
	}

	@Override
	void write(ByteBuf buf, KVMessage.Draining d) {
		Fields.writeString(buf, d.reason());
	}

	@Override
	KVMessage.Draining read(FrameReader r) {
		return new KVMessage.Draining(r.string("reason", KVMessage.MAX_REASON_BYTES));
	}
}
