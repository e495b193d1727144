package io.kvferry.spi;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.concurrent.FastThreadLocal;
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
	 * Like {@link #wrap(long, int)}, for the data path, where a buffer per frame or per piece is made and written at
	 * once: a slice of a window this thread keeps over the memory around {@code address}, so that each costs one small
	 * slice object instead of a wrapper, a {@code ByteBuffer} and a reference count of its own. The caller releases it
	 * like any buffer; its {@code refCnt()} is its window's, shared with the thread's other views of the same memory.
	 * Use it from the thread that reads or writes the buffer (an event loop), so that two threads never share a
	 * window's NIO view.
	 *
	 * @param address first byte
	 * @param length bytes, readable from index 0
	 * @return a buffer over that memory
	 */
	public static ByteBuf view(long address, int length) {
		if (length < 0) {
			throw new IllegalArgumentException("length : " + length + " (expected: >= 0)");
		}
		if (length > Windows.MAX_VIEW || address < 0) {
			return wrap(address, length);
		}
		return WINDOWS.get().view(address, length);
	}

	private static final FastThreadLocal<Windows> WINDOWS = new FastThreadLocal<>() {
		@Override
		protected Windows initialValue() {
			return new Windows();
		}
	};

	/**
	 * A thread's windows: each a wrapper over {@code 2 × BLOCK} bytes from a {@code BLOCK}-aligned address, so that
	 * any view of at most {@code BLOCK} bytes starting in that block lies inside it. Making a window touches no memory;
	 * a view is bounds-checked against its own length, so the window reaching past the registered region reads and
	 * writes nothing there. A few windows, picked by block, keep a thread that sends from many layers' buffers from
	 * making a window per frame.
	 */
	private static final class Windows {

		static final int BLOCK_SHIFT = 26;
		static final int MAX_VIEW = 1 << BLOCK_SHIFT;
		static final int WINDOW = 2 * MAX_VIEW;
		static final int SLOTS = 16;

		private final long[] blocks = new long[SLOTS];
		private final @Nullable ByteBuf[] windows = new ByteBuf[SLOTS];

		ByteBuf view(long address, int length) {
			long block = address >>> BLOCK_SHIFT;
			int slot = (int) (block ^ (block >>> 4)) & (SLOTS - 1);
			ByteBuf window = windows[slot];
			if (window == null || blocks[slot] != block || window.refCnt() == 0) {
				window = wrap(block << BLOCK_SHIFT, WINDOW);
				windows[slot] = window;
				blocks[slot] = block;
			}
			int index = (int) (address - (block << BLOCK_SHIFT));
			try {
				return window.retainedSlice(index, length);
			}
			catch (IllegalReferenceCountException e) {
				// Released to zero by another thread meanwhile (a view released twice): never reuse that window.
				windows[slot] = null;
				return wrap(address, length);
			}
		}
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
