package io.kvferry.examples;

import java.nio.ByteBuffer;

/**
 * The same-host ceiling: one thread copying native memory into native memory, the work a shared-memory path does at
 * best once per byte. Reusable by any same-host transport's figure, in the same run.
 */
final class MemcpyBaseline {

	/** Bytes per copy call: large enough to be the copy loop, not the call. */
	private static final int SLICE = 1 << 20;

	private MemcpyBaseline() {
	}

	/**
	 * Copies all of {@code src} into {@code dst} (both direct, same capacity) on this thread.
	 *
	 * @return nanoseconds taken
	 */
	static long copy(ByteBuffer src, ByteBuffer dst) {
		if (!src.isDirect() || !dst.isDirect() || dst.capacity() < src.capacity()) {
			throw new IllegalArgumentException("memcpy baseline : " + src + " -> " + dst
					+ " (expected: direct buffers, the destination at least as large)");
		}
		ByteBuffer from = src.duplicate().clear();
		ByteBuffer to = dst.duplicate().clear();
		long start = System.nanoTime();
		// Direct to direct: ByteBuffer.put is Unsafe.copyMemory, the JDK's memcpy.
		for (int pos = 0; pos < from.capacity(); pos += SLICE) {
			from.limit(Math.min(from.capacity(), pos + SLICE)).position(pos);
			to.put(from);
		}
		return System.nanoTime() - start;
	}

	/** @return GB/s (10^9 bytes per second) of one {@link #copy} */
	static double gbps(ByteBuffer src, ByteBuffer dst) {
		return src.capacity() / (double) copy(src, dst);
	}
}
