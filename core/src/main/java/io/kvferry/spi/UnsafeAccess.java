package io.kvferry.spi;

import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * The library's one hold on {@code sun.misc.Unsafe} (which the {@code jdk.unsupported} module keeps open, so users
 * need no flags): direct buffer views of raw addresses and the unmapping of mapped files. Everything else goes through
 * {@link NativeMemory}, which is what transports call; nothing outside this package touches {@code Unsafe}.
 */
final class UnsafeAccess {

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

	private UnsafeAccess() {
	}

	/** @return a direct buffer over {@code [address, address + length)}, position 0; it does not own the memory */
	static ByteBuffer directView(long address, int length) {
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

	/** Points a view made by {@link #directView} at other memory: position 0, limit and capacity {@code length}. */
	static void retarget(ByteBuffer view, long address, int length) {
		UNSAFE.putLong(view, ADDRESS, address);
		UNSAFE.putInt(view, CAPACITY, length);
		UNSAFE.putInt(view, LIMIT, length);
		UNSAFE.putInt(view, POSITION, 0);
		UNSAFE.putInt(view, MARK, -1);
	}

	/** Releases a mapped or allocated direct buffer's memory now; the buffer must not be touched afterwards. */
	static void invokeCleaner(ByteBuffer buffer) {
		UNSAFE.invokeCleaner(buffer);
	}
}
