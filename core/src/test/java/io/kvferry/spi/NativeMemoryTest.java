package io.kvferry.spi;

import static org.assertj.core.api.Assertions.assertThat;

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
}
