package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.netty.buffer.ByteBuf;

/** {@code HELLO_ACK}: {@code layout, i64 token}. */
final class HelloAckCodec extends ControlCodec<KVMessage.HelloAck> {

	HelloAckCodec() {
		super(KVFrameCodec.TYPE_HELLO_ACK, "HELLO_ACK", KVMessage.HelloAck.class);
	}

	@Override
	long length(KVMessage.HelloAck a) {
		return PeerLayoutCodec.length(a.layout()) + 8;
	}

	@Override
	void write(ByteBuf buf, KVMessage.HelloAck a) {
		PeerLayoutCodec.write(buf, a.layout());
		buf.writeLong(a.token());
	}

	@Override
	KVMessage.HelloAck read(FrameReader r) {
		PeerLayout layout = PeerLayoutCodec.read(r);
		return new KVMessage.HelloAck(layout, r.i64("token"));
	}
}
