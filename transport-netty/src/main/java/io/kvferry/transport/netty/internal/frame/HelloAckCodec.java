package io.kvferry.transport.netty.internal.frame;

import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.buffer.ByteBuf;

/** {@code HELLO_ACK}: {@code layout, i64 token, i64 incarnation, i64 leaseMillis}. */
final class HelloAckCodec extends ControlCodec<KVMessage.HelloAck> {

	HelloAckCodec() {
		super(KVFrameCodec.TYPE_HELLO_ACK, "HELLO_ACK", KVMessage.HelloAck.class);
	}

	@Override
	long length(KVMessage.HelloAck a) {
		return PeerLayoutCodec.length(a.layout()) + 8 + 8 + 8;
	}

	@Override
	void write(ByteBuf buf, KVMessage.HelloAck a) {
		PeerLayoutCodec.write(buf, a.layout());
		buf.writeLong(a.token());
		buf.writeLong(a.incarnation());
		buf.writeLong(a.leaseMillis());
	}

	@Override
	KVMessage.HelloAck read(FrameReader r) {
		PeerLayout layout = PeerLayoutCodec.read(r);
		long token = r.i64("token");
		long incarnation = r.i64("incarnation");
		return new KVMessage.HelloAck(layout, token, incarnation, r.i64("leaseMillis"));
	}
}
