package io.kvferry.spi;

import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;

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
 * (which the {@code jdk.unsupported} module keeps open).
 */
public final class NativeMemory {

	private static final sun.misc.Unsafe UNSAFE;
	private static final Class<?> DIRECT;
	private static final long ADDRESS;
	private static final long CAPACITY;
	private static final long LIMIT;
	private static final long MARK;
	private static final long POSITION;

	static {
		try {
			Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
			f.setAccessible(true);
			UNSAFE = (sun.misc.Unsafe) f.get(null);
			DIRECT = Class.forName("java.nio.DirectByteBuffer");
			ADDRESS = UNSAFE.objectFieldOffset(Buffer.class.getDeclaredField("address"));
			CAPACITY = UNSAFE.objectFieldOffset(Buffer.class.getDeclaredField("capacity"));
			LIMIT = UNSAFE.objectFieldOffset(Buffer.class.getDeclaredField("limit"));
			MARK = UNSAFE.objectFieldOffset(Buffer.class.getDeclaredField("mark"));
			POSITION = UNSAFE.objectFieldOffset(Buffer.class.getDeclaredField("position"));
		}
		catch (ReflectiveOperationException | RuntimeException e) {
			throw new ExceptionInInitializerError("kvferry needs sun.misc.Unsafe (module jdk.unsupported): " + e);
		}
	}

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
		try {
			ByteBuffer b = (ByteBuffer) UNSAFE.allocateInstance(DIRECT);
			UNSAFE.putLong(b, ADDRESS, address);
			UNSAFE.putInt(b, CAPACITY, length);
			UNSAFE.putInt(b, LIMIT, length);
			UNSAFE.putInt(b, MARK, -1);
			return b;
		}
		catch (InstantiationException e) {
			throw new IllegalStateException("cannot create a direct buffer view: " + e, e);
		}
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
		UNSAFE.putLong(view, ADDRESS, address);
		UNSAFE.putInt(view, CAPACITY, length);
		UNSAFE.putInt(view, LIMIT, length);
		UNSAFE.putInt(view, POSITION, 0);
		UNSAFE.putInt(view, MARK, -1);
		return view;
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
