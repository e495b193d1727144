package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/** {@code JOINED}: {@code i32 stripe}. */
final class JoinedCodec extends ControlCodec<KVMessage.Joined> {

	JoinedCodec() {
		super(KVFrameCodec.TYPE_JOINED, "JOINED", KVMessage.Joined.class);
	}

	@Override
	long length(KVMessage.Joined j) {
		return 4;
	}

	@Override
	void write(ByteBuf buf, KVMessage.Joined j) {
		buf.writeInt(j.stripe());
	}

	@Override
	KVMessage.Joined read(FrameReader r) {
		return new KVMessage.Joined(r.i32("stripe"));
	}
}
