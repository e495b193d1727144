package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Test;

class DataFrameCursorTest {

	private static final PooledByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;

	@Test
	void blockThatFitsIsOneFrameWithItsOwnHeader() {
		MemoryRegion src = Samples.randomRegion(4096, 1);
		DataHeader header = new DataHeader(1, RegionKind.KV, 0, 128, 1000, 1000, 4);
		List<DataHeader> frames = sendAndCheck(new DataBlock(header, src.address(), 1000), 4096, src, 0,
				1000);
		assertThat(frames).containsExactly(header);
	}

	@Test
	void contiguousBlockIsCutAtAnyByteWithAdjustedOffsets() {
		MemoryRegion src = Samples.randomRegion(10_000, 2);
		DataHeader header = new DataHeader(1, RegionKind.KV, 0, 5, 10_000, 10_000, 1);
		List<DataHeader> frames = sendAndCheck(new DataBlock(header, src.address(), 10_000), 4096, src, 0,
				10_000);
		assertThat(frames).extracting(DataHeader::dstOffset).containsExactly(5L, 4101L, 8197L);
		assertThat(frames).extracting(DataHeader::chunkLen).containsExactly(4096, 4096, 1808);
		assertThat(frames).allSatisfy(f -> assertThat(f.count()).isEqualTo(1));
	}

	@Test
	void contiguousSourceWithStridedDestinationIsCutAtChunkBoundaries() {
		MemoryRegion src = Samples.randomRegion(3000, 3);
		DataHeader header = new DataHeader(1, RegionKind.KV, 0, 0, 300, 1000, 10);
		List<DataHeader> frames = sendAndCheck(new DataBlock(header, src.address(), 300), 1024, src, 0, 300);
		assertThat(frames).extracting(DataHeader::count).containsExactly(3, 3, 3, 1);
		assertThat(frames).extracting(DataHeader::dstOffset).containsExactly(0L, 3000L, 6000L, 9000L);
	}

	@Test
	void stridedBlockIsGatheredPerFrame() {
		MemoryRegion src = Samples.randomRegion(64 * 512, 4);
		DataHeader header = new DataHeader(3, RegionKind.KV, 1, 256, 128, 1024, 64);
		List<DataHeader> frames = sendAndCheck(new DataBlock(header, src.address() + 64, 512), 2048, src, 64,
				512);
		assertThat(frames).hasSize(4).allSatisfy(f -> {
			assertThat(f.count()).isEqualTo(16);
			assertThat(f.dstStride()).isEqualTo(1024);
		});
	}

	@Test
	void stridedChunksLargerThanAFrameAreCutIntoPieces() {
		MemoryRegion src = Samples.randomRegion(3 * 3000, 5);
		DataHeader header = new DataHeader(3, RegionKind.STATE, 0, 0, 2500, 4000, 3);
		List<DataHeader> frames = sendAndCheck(new DataBlock(header, src.address(), 3000), 1024, src, 0,
				3000);
		assertThat(frames).hasSize(9);
		assertThat(frames).extracting(DataHeader::dstOffset).containsExactly(0L, 1024L, 2048L, 4000L, 5024L, 6048L,
				8000L, 9024L, 10048L);
	}

	@Test
	void emptyBlockIsOneHeaderWithoutPayload() {
		DataFrameCursor cursor = new DataFrameCursor(new DataBlock(new DataHeader(1, RegionKind.AUX, 0, 0, 0, 0, 0), 1,
				0), 1024);
		assertThat(cursor.next().payloadLength()).isZero();
		assertThat(cursor.payload(ALLOC)).isNull();
		assertThat(cursor.hasNext()).isFalse();
	}

	/**
	 * Sends the block through a cursor and scatters every frame with a {@link RegionSink}: the destination must hold
	 * chunk {@code i} of the source at {@code dstOffset + i × dstStride}.
	 */
	private static List<DataHeader> sendAndCheck(DataBlock block, int max, MemoryRegion src,
			long srcOffset, long srcStride) {
		DataHeader h = block.header();
		MemoryRegion dst = MemoryRegion.allocate(h.dstOffset() + h.span() + 16, 1);
		DataFrameCursor cursor = new DataFrameCursor(block, max);
		UnpooledByteBufAllocator alloc = new UnpooledByteBufAllocator(true);
		AtomicLong received = new AtomicLong();
		List<DataHeader> frames = new ArrayList<>();
		while (cursor.hasNext()) {
			DataHeader frame = cursor.next();
			assertThat(frame.payloadLength()).isLessThanOrEqualTo(max);
			frames.add(frame);
			ByteBuf payload = cursor.payload(alloc);
			try {
				RegionSink sink = new RegionSink(dst, frame, received, () -> { });
				sink.write(payload);
				sink.complete();
			}
			finally {
				// A view of the source shares its window's count; a gathered buffer is the allocator's (checked below).
				payload.release();
			}
		}
		assertThat(received.get()).isEqualTo(h.payloadLength());
		assertThat(cursor.remainingBytes()).isZero();
		assertThat(alloc.metric().usedDirectMemory()).as("every gathered payload freed").isZero();
		long dstStride = h.count() == 1 ? h.chunkLen() : h.dstStride();
		for (int i = 0; i < h.count(); i++) {
			assertThat(Samples.read(dst, h.dstOffset() + i * dstStride, h.chunkLen()))
					.as("chunk %d", i)
					.isEqualTo(Samples.read(src, srcOffset + i * srcStride, h.chunkLen()));
		}
		return frames;
	}
}
