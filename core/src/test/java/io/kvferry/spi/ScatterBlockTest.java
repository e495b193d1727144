package io.kvferry.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The sender's side of a scatter block: where each piece's bytes are read, one run or strided chunks. */
class ScatterBlockTest {

	private static ScatterHeader header(int... lengths) {
		int[] regions = new int[lengths.length];
		long[] offsets = new long[lengths.length];
		for (int i = 1; i < lengths.length; i++) {
			offsets[i] = offsets[i - 1] + Math.max(0, lengths[i - 1]);
		}
		return new ScatterHeader(3, RegionKind.KV, lengths.length, regions, offsets, lengths);
	}

	@Test
	void aGatheredPieceIsReadChunkByChunkAndSentAloneAsItsStridedBlock() {
		ScatterBlock block = new ScatterBlock(header(512, 100), new long[] { 1000, 9000 }, new long[] { 300, 0 },
				new int[] { 128, 100 }, SendGate.OPEN);
		List<String> read = new ArrayList<>();
		block.chunks(0, (address, length) -> read.add(address + "+" + length));
		block.chunks(1, (address, length) -> read.add(address + "+" + length));
		assertThat(read).containsExactly("1000+128", "1300+128", "1600+128", "1900+128", "9000+100");
		assertThat(block.isContiguous(0)).isFalse();
		assertThat(block.isContiguous(1)).isTrue();
		DataBlock alone = block.piece(0);
		assertThat(alone.header()).isEqualTo(new DataHeader(3, RegionKind.KV, 0, 0, 128, 128, 4));
		assertThat(alone.srcStride()).isEqualTo(300);
		assertThat(block.piece(1).header()).isEqualTo(block.header().piece(1));
	}

	@Test
	void chunksThatDoNotTileTheirPieceOrOverlapAreRefused() {
		assertThatThrownBy(() -> new ScatterBlock(header(500), new long[] { 0 }, new long[] { 300 }, new int[] { 128 },
				SendGate.OPEN)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("piece 0 : 500 bytes in source chunks of 128 every 300 bytes");
		assertThatThrownBy(() -> new ScatterBlock(header(512), new long[] { 0 }, new long[] { 64 }, new int[] { 128 },
				SendGate.OPEN)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("apart by at least a chunk");
		assertThatThrownBy(() -> new ScatterBlock(header(512), new long[] { 0 }, new long[] { 600 }, new int[] { 0 },
				SendGate.OPEN)).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> new ScatterBlock(header(512, 8), new long[] { 0, 0 }, new long[] { 600 },
				new int[] { 128 }, SendGate.OPEN)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("1 and 1 entries for 2 pieces");
	}

	@Test
	void onePieceRunsKeepTheShapeTheHeaderIsLeftToJudge() {
		// A rogue sender's empty or negative piece is the header's to refuse (ScatterHeader.problem), not the block's.
		ScatterBlock block = new ScatterBlock(header(0, -5), new long[] { 0, 0 }, SendGate.OPEN);
		assertThat(block.isContiguous(0)).isTrue();
		assertThat(block.header().problem(block.payloadLength())).contains("length 0");
	}
}
