package io.kvferry.transport.netty.internal.frame;

import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;

/** {@code FENCE}: {@code i64 room, i64 bytes, i64 checksum}. */
final class FenceCodec extends ControlCodec<KVMessage.Fence> {

	FenceCodec() {
		super(KVFrameCodec.TYPE_FENCE, "FENCE", KVMessage.Fence.class);
	}

	@Override
	long length(KVMessage.Fence f) {
		return 8 + 8 + 8;
	}

	@Override
	void write(ByteBuf buf, KVMessage.Fence f) {
		buf.writeLong(f.room());
		buf.writeLong(f.bytes());
		buf.writeLong(f.checksum());
	}

	@Override
	KVMessage.Fence read(FrameReader r) {
		long room = r.i64("room");
		long bytes = r.i64("bytes");
		return new KVMessage.Fence(room, bytes, r.i64("checksum"));
	}
}
