package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/** {@code JOIN}: {@code i64 token, i32 stripe}. */
final class JoinCodec extends ControlCodec<KVMessage.Join> {

	JoinCodec() {
		super(KVFrameCodec.TYPE_JOIN, "JOIN", KVMessage.Join.class);
	}

	@Override
	long length(KVMessage.Join j) {
		return 8 + 4;
	}

	@Override
	void write(ByteBuf buf, KVMessage.Join j) {
		buf.writeLong(j.token());
		buf.writeInt(j.stripe());
	}

	@Override
	KVMessage.Join read(FrameReader r) {
		long token = r.i64("token");
		return new KVMessage.Join(token, r.i32("stripe"));
	}
}
