package io.kvferry.bootstrap.server.internal;

import java.util.Arrays;

import io.netty.buffer.ByteBuf;

/** Accumulates a request body by copy, up to a limit. Used by one subscriber at a time: not thread-safe. */
final class BodyBuffer {

	private byte[] bytes = new byte[256];
	private int length;

	BodyBuffer append(ByteBuf chunk, int limit) {
		int readable = chunk.readableBytes();
		if ((long) length + readable > limit) {
			throw RequestException.tooLarge(limit);
		}
		if (length + readable > bytes.length) {
			bytes = Arrays.copyOf(bytes, Math.min(limit, Math.max(length + readable, bytes.length * 2)));
		}
		chunk.getBytes(chunk.readerIndex(), bytes, length, readable);
		length += readable;
		return this;
	}

	byte[] toByteArray() {
		return Arrays.copyOf(bytes, length);
	}
}
