package io.kvferry.transport.netty.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ScatteringByteChannel;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledHeapByteBuf;

/**
 * The destinations of a scatter frame's next pieces, for one scattering read straight into them
 * ({@link LandingNioSocketChannel}). It travels through Netty's read loop as the read's buffer, holding no bytes
 * itself, and comes back to {@link KVFrameDecoder} with the count the read landed. The destinations are the decoder's
 * reusable views; the zone is valid for the one read it was made for.
 */
final class ScatterZone extends UnpooledHeapByteBuf {

	private final ByteBuffer[] destinations;
	private final int parts;
	private final long bytes;
	private int landed;

	/**
	 * @param destinations views of the pieces' next destination bytes, in payload order
	 * @param parts how many of them the read may fill
	 * @param bytes their bytes in all
	 */
	ScatterZone(ByteBuffer[] destinations, int parts, long bytes) {
		super(UnpooledByteBufAllocator.DEFAULT, 0, 0);
		this.destinations = destinations;
		this.parts = parts;
		this.bytes = bytes;
	}

	/** @return the bytes the read may land, at most {@link Integer#MAX_VALUE} */
	int capacityToLand() {
		return (int) Math.min(bytes, Integer.MAX_VALUE);
	}

	/**
	 * Reads from {@code channel} into the destinations, once.
	 *
	 * @return bytes read, 0 when none were there, -1 at the end of the stream
	 */
	int readFrom(ScatteringByteChannel channel) throws IOException {
		long n = channel.read(destinations, 0, parts);
		landed = n > 0 ? (int) n : 0;
		return (int) n;
	}

	/** @return the bytes the read landed */
	int landed() {
		return landed;
	}
}
