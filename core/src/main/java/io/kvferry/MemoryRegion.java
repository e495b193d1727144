package io.kvferry;

import java.nio.ByteBuffer;
import java.util.Objects;

import io.kvferry.spi.NativeMemory;
import io.netty.buffer.ByteBuf;
import io.netty.util.internal.PlatformDependent;
import org.jspecify.annotations.Nullable;

/**
 * A registered block of native memory holding {@code itemLen}-byte items: one page of one layer's K, V or MLA buffer,
 * one aux row, or one state slot. Described, as in SGLang, by base address, length and item length.
 *
 * <p>A region made by {@link #of(long, long, int)} only describes memory somebody else owns (an engine's KV pool);
 * one made by {@link #allocate(long, int)} owns direct memory that lives as long as the region object is reachable.
 * Addresses are 64-bit throughout: never compute an offset in {@code int}.
 *
 * <p>A region is host memory unless made with a {@link MemoryKind} that says otherwise ({@link #of(long, long, int,
 * MemoryKind)}): a device region's address is not the JVM's to read, so it cannot be {@linkplain #wrap wrapped}, and
 * only a transport that reaches device memory accepts it.
 */
public final class MemoryRegion {

	private final long address;
	private final long length;
	private final int itemLen;
	private final MemoryKind kind;
	// Keeps allocated memory alive; null for regions that only describe memory.
	private final @Nullable ByteBuffer owner;

	private MemoryRegion(long address, long length, int itemLen, MemoryKind kind, @Nullable ByteBuffer owner) {
		if (address == 0) {
			throw new IllegalArgumentException("address : 0 (expected: a non-null native address)");
		}
		if (itemLen <= 0) {
			throw new IllegalArgumentException("itemLen : " + itemLen + " (expected: > 0)");
		}
		if (length < itemLen) {
			throw new IllegalArgumentException("length : " + length + " (expected: >= itemLen " + itemLen + ")");
		}
		this.address = address;
		this.length = length;
		this.itemLen = itemLen;
		this.kind = Objects.requireNonNull(kind, "kind");
		this.owner = owner;
	}

	/**
	 * Describes memory owned elsewhere.
	 *
	 * @param address base address of the region
	 * @param length bytes in the region
	 * @param itemLen bytes of one item (page of one layer buffer, aux row, state slot)
	 * @return a region over that memory
	 */
	public static MemoryRegion of(long address, long length, int itemLen) {
		return of(address, length, itemLen, MemoryKind.HOST);
	}

	/**
	 * Describes memory owned elsewhere, of the given kind: an accelerator's KV pool is {@link MemoryKind#cuda}.
	 *
	 * @param address base address of the region (a device pointer for device memory)
	 * @param length bytes in the region
	 * @param itemLen bytes of one item
	 * @param kind where the bytes live
	 * @return a region over that memory
	 */
	public static MemoryRegion of(long address, long length, int itemLen, MemoryKind kind) {
		return new MemoryRegion(address, length, itemLen, kind, null);
	}

	/**
	 * Allocates zeroed direct memory for {@code items} items (for tests, examples and engines without their own pool).
	 *
	 * @param items number of items
	 * @param itemLen bytes per item
	 * @return a region owning its memory
	 */
	public static MemoryRegion allocate(long items, int itemLen) {
		if (items <= 0) {
			throw new IllegalArgumentException("items : " + items + " (expected: > 0)");
		}
		long bytes = Math.multiplyExact(items, (long) itemLen);
		if (bytes > Integer.MAX_VALUE) {
			throw new IllegalArgumentException("items * itemLen : " + bytes + " (expected: <= " + Integer.MAX_VALUE
					+ " per allocated region; describe larger pools with MemoryRegion.of)");
		}
		ByteBuffer buffer = ByteBuffer.allocateDirect((int) bytes);
		return new MemoryRegion(PlatformDependent.directBufferAddress(buffer), bytes, itemLen, MemoryKind.HOST, buffer);
	}

	/**
	 * @return the part {@code [offset, offset + bytes)} of this region, of the same item length and kind, keeping
	 *         allocated memory alive as long as the part is reachable
	 */
	MemoryRegion slice(long offset, long bytes) {
		if (!contains(offset, bytes)) {
			throw new IndexOutOfBoundsException("offset " + offset + " + bytes " + bytes + " outside region of length "
					+ length);
		}
		return new MemoryRegion(address + offset, bytes, itemLen, kind, owner);
	}

	public long address() {
		return address;
	}

	public long length() {
		return length;
	}

	public int itemLen() {
		return itemLen;
	}

	/** @return where the region's bytes live; {@link MemoryKind#HOST} unless the region was made with another */
	public MemoryKind kind() {
		return kind;
	}

	/** @return how many whole items fit in the region */
	public long itemCount() {
		return length / itemLen;
	}

	/** @return the address of item {@code index}, computed in 64 bits */
	public long itemAddress(long index) {
		return address + index * itemLen;
	}

	/**
	 * @return whether {@code [offset, offset + bytes)} lies inside the region
	 */
	public boolean contains(long offset, long bytes) {
		return offset >= 0 && bytes >= 0 && offset <= length - bytes;
	}

	/**
	 * Wraps part of the region as a {@link ByteBuf} without copying. The buffer does not free the memory; the caller
	 * releases the wrapper like any other buffer.
	 *
	 * @param offset byte offset in the region
	 * @param bytes number of bytes, at most {@link Integer#MAX_VALUE}
	 * @return a buffer over that memory, readable from 0 to {@code bytes}
	 * @throws IllegalStateException for a device region, whose memory the JVM cannot read
	 */
	public ByteBuf wrap(long offset, int bytes) {
		if (!kind.isHost()) {
			throw new IllegalStateException("cannot wrap " + this + ": " + kind + " memory is not the JVM's to read");
		}
		if (!contains(offset, bytes)) {
			throw new IndexOutOfBoundsException("offset " + offset + " + bytes " + bytes + " outside region of length "
					+ length);
		}
		return NativeMemory.wrap(address + offset, bytes);
	}

	@Override
	public boolean equals(Object o) {
		if (this == o) {
			return true;
		}
		if (!(o instanceof MemoryRegion)) {
			return false;
		}
		MemoryRegion that = (MemoryRegion) o;
		return address == that.address && length == that.length && itemLen == that.itemLen && kind.equals(that.kind);
	}

	@Override
	public int hashCode() {
		return Objects.hash(address, length, itemLen, kind);
	}

	@Override
	public String toString() {
		return "MemoryRegion{address=0x" + Long.toHexString(address) + ", length=" + length + ", itemLen=" + itemLen
				+ (kind.isHost() ? "" : ", kind=" + kind) + '}';
	}
}
