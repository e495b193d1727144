package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/** {@code ABORT_ACK}: {@code i64 room}. */
final class AbortAckCodec extends ControlCodec<KVMessage.AbortAck> {

	AbortAckCodec() {
		super(KVFrameCodec.TYPE_ABORT_ACK, "ABORT_ACK", KVMessage.AbortAck.class);
	}

	@Override
	long length(KVMessage.AbortAck a) {
		return 8;
	}

	@Override
	void write(ByteBuf buf, KVMessage.AbortAck a) {
		buf.writeLong(a.room());
	}

	@Override
	KVMessage.AbortAck read(FrameReader r) {
		return new KVMessage.AbortAck(r.i64("room"));
	}
}
