package io.kvferry.spi;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.PlatformDependent;
import org.jspecify.annotations.Nullable;

/**
 * Views of registered memory as buffers, without copying. Transports use {@link #wrap(long, int)} to send KV bytes
 * straight from the address a region describes.
 *
 * <p>Netty can wrap a raw address only when the JVM lets it call {@code DirectByteBuffer(long, int)}, which on Java 9+
 * takes {@code --add-opens java.base/java.nio=ALL-UNNAMED -Dio.netty.tryReflectionSetAccessible=true}. So that users
 * need no flags, this class falls back to building the {@code ByteBuffer} view itself through {@code sun.misc.Unsafe}
 * (which the {@code jdk.unsupported} module keeps open), held by this package's one accessor of it.
 */
public final class NativeMemory {

	private NativeMemory() {
	}

	/**
	 * Wraps native memory as a buffer. Releasing the buffer never frees the memory; the caller releases the buffer.
	 *
	 * @param address first byte
	 * @param length bytes, readable from index 0
	 * @return a buffer over that memory
	 */
	public static ByteBuf wrap(long address, int length) {
		if (length < 0) {
			throw new IllegalArgumentException("length : " + length + " (expected: >= 0)");
		}
		if (PlatformDependent.hasDirectBufferNoCleanerConstructor()) {
			return Unpooled.wrappedBuffer(address, length, false);
		}
		return Unpooled.wrappedBuffer(byteBuffer(address, length));
	}

	/**
	 * @return a {@link ByteBuffer} over native memory (position 0, limit and capacity {@code length}); it does not own
	 *         the memory
	 */
	public static ByteBuffer byteBuffer(long address, int length) {
		return UnsafeAccess.directView(address, length);
	}

	/**
	 * Points a view made by {@link #byteBuffer(long, int)} at other memory, so that a loop over many pieces (a
	 * checksum over scattered chunks) needs one view object, not one per piece.
	 *
	 * @param view a view from {@link #byteBuffer(long, int)}, or {@code null} for a new one
	 * @return {@code view} (or the new view) over {@code [address, address + length)}, position 0
	 */
	public static ByteBuffer retarget(@Nullable ByteBuffer view, long address, int length) {
		if (view == null) {
			return byteBuffer(address, length);
		}
		UnsafeAccess.retarget(view, address, length);
		return view;
	}

	/**
	 * Unmaps a mapped file's memory now, instead of when the buffer is collected, so that a ring can be unmapped at a
	 * known moment. No thread may read or write the buffer's memory afterwards: it would fault.
	 *
	 * @param mapped a buffer from {@code FileChannel.map}
	 * @throws IllegalArgumentException for a slice or duplicate (only the mapping itself can be unmapped)
	 */
	public static void unmap(MappedByteBuffer mapped) {
		UnsafeAccess.invokeCleaner(mapped);
	}

	/** Copies {@code length} bytes between native addresses. */
	public static void copy(long src, long dst, long length) {
		PlatformDependent.copyMemory(src, dst, length);
	}

	/**
	 * Copies bytes of a buffer to a native address, whatever the buffer's memory (direct, heap, composite), without
	 * an intermediate copy. The buffer's indices are not changed.
	 *
	 * @param src the buffer
	 * @param index its first byte to copy
	 * @param dst where the bytes go
	 * @param length how many
	 */
	public static void copy(ByteBuf src, int index, long dst, int length) {
		if (src.hasMemoryAddress()) {
			PlatformDependent.copyMemory(src.memoryAddress() + index, dst, length);
		}
		else if (src.hasArray()) {
			PlatformDependent.copyMemory(src.array(), src.arrayOffset() + index, dst, length);
		}
		else {
			// Composite or exotic buffers: walk their NIO views without copying them first.
			long to = dst;
			for (ByteBuffer bb : src.nioBuffers(index, length)) {
				int n = bb.remaining();
				if (bb.isDirect()) {
					PlatformDependent.copyMemory(PlatformDependent.directBufferAddress(bb) + bb.position(), to, n);
				}
				else {
					PlatformDependent.copyMemory(bb.array(), bb.arrayOffset() + bb.position(), to, n);
				}
				to += n;
			}
		}
	}
}
