package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvferry.ParallelLayout;
import org.junit.jupiter.api.Test;

/** Which pages of a chunk go to a destination after decode's prefix and within this CP rank's share. */
class ChunkWindowTest {

	private static final ParallelLayout CP0 = ParallelLayout.SINGLE.withAttnCp(2, 0);
	private static final ParallelLayout CP1 = ParallelLayout.SINGLE.withAttnCp(2, 1);

	@Test
	void pagesOfDecodesPrefixAreSkippedAndTheRestLandFromTheFirstDestination() {
		// 10 pages, decode holds 4; chunk [2, 7) sends its pages 4..6 to destinations 0..2.
		assertThat(ChunkWindow.of(2, 5, 10, 4, ParallelLayout.SINGLE, false)).isEqualTo(new ChunkWindow(2, 5, 0));
		assertThat(ChunkWindow.of(0, 3, 10, 4, ParallelLayout.SINGLE, false).length()).isZero();
		assertThat(ChunkWindow.of(7, 3, 10, 4, ParallelLayout.SINGLE, false)).isEqualTo(new ChunkWindow(0, 3, 3));
		// A full hit sends no page.
		assertThat(ChunkWindow.of(0, 10, 10, 10, ParallelLayout.SINGLE, false).length()).isZero();
	}

	@Test
	void eachCpRankSendsItsShareOfThePagesAfterThePrefix() {
		// 5 pages after a prefix of 2: CP rank 0 sends room pages 2..4, CP rank 1 pages 5..6.
		assertThat(ChunkWindow.of(0, 7, 7, 2, CP0, true)).isEqualTo(new ChunkWindow(2, 5, 0));
		assertThat(ChunkWindow.of(0, 7, 7, 2, CP1, true)).isEqualTo(new ChunkWindow(5, 7, 3));
		assertThat(ChunkWindow.of(4, 3, 7, 2, CP0, true)).isEqualTo(new ChunkWindow(0, 1, 2));
		assertThat(ChunkWindow.of(4, 3, 7, 2, CP1, true)).isEqualTo(new ChunkWindow(1, 3, 3));
		// Without all-CP-ranks transfer the share is everything (the other CP ranks do not send at all).
		assertThat(ChunkWindow.of(0, 7, 7, 2, CP1, false)).isEqualTo(new ChunkWindow(2, 7, 0));
	}
}
