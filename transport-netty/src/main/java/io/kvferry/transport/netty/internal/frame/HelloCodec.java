package io.kvferry.transport.netty.internal.frame;

import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.buffer.ByteBuf;

/** {@code HELLO}: {@code i32 protocolVersion, layout, bool checksums, i32 stripes, i64 incarnation}. */
final class HelloCodec extends ControlCodec<KVMessage.Hello> {

	HelloCodec() {
		super(KVFrameCodec.TYPE_HELLO, "HELLO", KVMessage.Hello.class);
	}

	@Override
	long length(KVMessage.Hello h) {
		return 4 + PeerLayoutCodec.length(h.layout()) + 1 + 4 + 8;
	}

	@Override
	void write(ByteBuf buf, KVMessage.Hello h) {
		buf.writeInt(h.protocolVersion());
		PeerLayoutCodec.write(buf, h.layout());
		buf.writeBoolean(h.checksums());
		buf.writeInt(h.stripes());
		buf.writeLong(h.incarnation());
	}

	@Override
	KVMessage.Hello read(FrameReader r) {
		int version = r.i32("protocolVersion");
		PeerLayout layout = PeerLayoutCodec.read(r);
		boolean checksums = r.bool("checksums");
		int stripes = r.i32("stripes");
		return new KVMessage.Hello(version, layout, checksums, stripes, r.i64("incarnation"));
	}
}
