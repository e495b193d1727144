package io.kvferry.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvferry.MemoryRegion;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

class NativeMemoryTest {

	private final MemoryRegion dest = MemoryRegion.allocate(64, 1);

	private byte[] dest(int n) {
		byte[] b = new byte[n];
		ByteBuf view = dest.wrap(0, n);
		view.getBytes(0, b);
		view.release();
		return b;
	}

	@Test
	void copiesFromDirectHeapAndCompositeBuffersFromTheGivenIndex() {
		ByteBuf direct = Unpooled.directBuffer(8).writeBytes(new byte[] { 9, 9, 1, 2, 3, 4, 9, 9 });
		NativeMemory.copy(direct, 2, dest.address(), 4);
		assertThat(dest(4)).containsExactly(1, 2, 3, 4);

		ByteBuf heap = Unpooled.wrappedBuffer(new byte[] { 9, 5, 6, 7 });
		NativeMemory.copy(heap, 1, dest.address() + 4, 3);
		assertThat(dest(7)).containsExactly(1, 2, 3, 4, 5, 6, 7);

		CompositeByteBuf composite = Unpooled.compositeBuffer().addComponents(true,
				Unpooled.directBuffer(2).writeBytes(new byte[] { 10, 11 }), Unpooled.wrappedBuffer(new byte[] { 12 }));
		NativeMemory.copy(composite, 0, dest.address() + 7, 3);
		assertThat(dest(10)).containsExactly(1, 2, 3, 4, 5, 6, 7, 10, 11, 12);
		assertThat(direct.readerIndex()).as("indices untouched").isZero();
		direct.release();
		composite.release();
	}

	@Test
	void viewsLieExactlyOverTheirBytesAndAreReleasedOneByOne() {
		MemoryRegion region = MemoryRegion.allocate(1 << 20, 1);
		ByteBuf first = NativeMemory.view(region.address() + 100, 300);
		ByteBuf second = NativeMemory.view(region.address() + 1000, 50);
		assertThat(first.memoryAddress()).isEqualTo(region.address() + 100);
		assertThat(second.memoryAddress()).isEqualTo(region.address() + 1000);
		assertThat(first.readableBytes()).isEqualTo(300);
		assertThat(first.capacity()).as("bounded to its own bytes").isEqualTo(300);
		first.setByte(299, 7);
		assertThat(region.wrap(399, 1).readByte()).isEqualTo((byte) 7);
		assertThatThrownBy(() -> first.getByte(300)).isInstanceOf(IndexOutOfBoundsException.class);
		// Views of one window share its count: releasing one leaves the others readable.
		assertThat(first.release()).isFalse();
		assertThat(second.getByte(0)).isZero();
		second.release();
		ByteBuf third = NativeMemory.view(region.address() + 100, 10);
		assertThat(third.memoryAddress()).isEqualTo(region.address() + 100);
		third.release();
	}

	@Test
	void aViewReleasedOnceTooOftenCostsItsThreadOnlyThatWindow() {
		MemoryRegion region = MemoryRegion.allocate(4096, 1);
		ByteBuf view = NativeMemory.view(region.address(), 16);
		// Release the window's own reference as well: every view of it is gone.
		view.release(view.refCnt());
		ByteBuf next = NativeMemory.view(region.address() + 8, 8);
		assertThat(next.memoryAddress()).isEqualTo(region.address() + 8);
		assertThat(next.refCnt()).isPositive();
		next.release();
	}

	@Test
	void aViewLargerThanAWindowIsAWrapperOfItsOwn() {
		MemoryRegion region = MemoryRegion.allocate(1, 1);
		ByteBuf big = NativeMemory.view(region.address(), 100 << 20);
		assertThat(big.capacity()).isEqualTo(100 << 20);
		assertThat(big.refCnt()).isOne();
		assertThat(big.release()).isTrue();
		assertThatThrownBy(() -> NativeMemory.view(region.address(), -1)).isInstanceOf(IllegalArgumentException.class);
	}
}
