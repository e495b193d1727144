package io.kvferry.transport.netty.internal.frame;

import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.buffer.ByteBuf;

/** {@code LAYOUT}: {@code i32 generation, layout}. */
final class LayoutCodec extends ControlCodec<KVMessage.Layout> {

	LayoutCodec() {
		super(KVFrameCodec.TYPE_LAYOUT, "LAYOUT", KVMessage.Layout.class);
	}

	@Override
	long length(KVMessage.Layout l) {
		return 4 + PeerLayoutCodec.length(l.layout());
	}

	@Override
	void write(ByteBuf buf, KVMessage.Layout l) {
		buf.writeInt(l.generation());
		PeerLayoutCodec.write(buf, l.layout());
	}

	@Override
	KVMessage.Layout read(FrameReader r) {
		int generation = r.i32("generation");
		PeerLayout layout = PeerLayoutCodec.read(r);
		return new KVMessage.Layout(generation, layout);
	}
}
