package io.kvferry.transport.netty.internal.frame;

import io.kvferry.spi.KVMessage;
import io.kvferry.transport.netty.internal.KVFrameCodec;
import io.netty.buffer.ByteBuf;

/** {@code RENEW}: {@code i32 count} (at most {@link KVMessage.Renew#MAX_ROOMS}), then that many {@code i64 room}. */
final class RenewCodec extends ControlCodec<KVMessage.Renew> {

	RenewCodec() {
		super(KVFrameCodec.TYPE_RENEW, "RENEW", KVMessage.Renew.class);
	}

	@Override
	long length(KVMessage.Renew r) {
		return 4 + 8L * r.rooms().length;
	}

	@Override
	void write(ByteBuf buf, KVMessage.Renew r) {
		long[] rooms = r.rooms();
		buf.writeInt(rooms.length);
		for (long room : rooms) {
			buf.writeLong(room);
		}
	}

	@Override
	KVMessage.Renew read(FrameReader r) {
		int n = r.count("rooms count", 8);
		if (n > KVMessage.Renew.MAX_ROOMS) {
			throw r.malformed("rooms count : " + n + " (expected: at most " + KVMessage.Renew.MAX_ROOMS + ")");
		}
		long[] rooms = new long[n];
		for (int i = 0; i < n; i++) {
			rooms[i] = r.i64("room");
		}
		return new KVMessage.Renew(rooms);
	}
}
