package io.kvferry.test;

import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.MemoryKind;
import io.kvferry.MemoryRegion;

/**
 * A stand-in for a GPU allocator on hosts without one: hands out regions of {@link MemoryKind#cuda device memory} at
 * addresses in a range no x86-64 process maps (above the 47-bit user space), so that a transport or engine that reads
 * or writes one through the host would fault at once instead of passing by luck. Tests use them to prove that a
 * host-only transport refuses device memory before touching it.
 */
public final class FakeDeviceMemory {

	/** The first fake device address: non-canonical on x86-64, never host memory. */
	private static final long BASE = 0x7fff_0000_0000_0000L;
	private static final AtomicLong NEXT = new AtomicLong(BASE);

	private FakeDeviceMemory() {
	}

	/**
	 * @param items number of items
	 * @param itemLen bytes per item
	 * @return a region of {@code cuda:0} memory nobody may touch
	 */
	public static MemoryRegion allocate(long items, int itemLen) {
		long bytes = Math.multiplyExact(items, (long) itemLen);
		long address = NEXT.getAndAdd((bytes + 0xffff) & ~0xffffL);
		return MemoryRegion.of(address, bytes, itemLen, MemoryKind.cuda(0));
	}
}
