package io.kvferry.examples.engine;

import io.kvferry.internal.topology.HeadSlice;
import io.kvferry.internal.topology.HeadSlicing;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The engine's head placement agrees with what kvferry's head slicing moves. */
class HeadLayoutTest {

	@Test
	void splitsHeadsOrReplicatesThem() {
		HeadLayout split = new HeadLayout(4, 8, 2);
		assertThat(split.kvHeadsPerRank()).isEqualTo(2);
		assertThat(split.modelKvHead(1, 0)).isEqualTo(2);
		assertThat(split.position(1, 3)).isEqualTo(1);
		assertThat(split.position(1, 1)).isEqualTo(-1);
		assertThat(split.rankOfQueryHead(3)).isZero();
		assertThat(split.rankOfQueryHead(4)).isEqualTo(1);

		HeadLayout replicated = new HeadLayout(4, 8, 8);
		assertThat(replicated.kvHeadsPerRank()).isEqualTo(1);
		assertThat(replicated.modelKvHead(5, 0)).isEqualTo(2);
		assertThat(replicated.rankOfQueryHead(5)).isEqualTo(5);
	}

	@Test
	void everyQueryHeadIsComputedWhereItsKVHeadIs() {
		for (int tp : new int[] { 1, 2, 4, 8 }) {
			HeadLayout l = new HeadLayout(4, 8, tp);
			for (int q = 0; q < 8; q++) {
				assertThat(l.position(l.rankOfQueryHead(q), q / 2)).as("TP %d, query head %d", tp, q)
						.isNotNegative();
			}
		}
	}

	@ParameterizedTest(name = "H{0} P{1} D{2}")
	@CsvSource({ "4,1,2", "4,2,1", "4,4,1", "4,1,4", "4,2,4", "4,4,2", "4,1,8", "4,8,1", "4,8,2", "4,2,8", "2,4,1",
			"8,2,4" })
	void kvferrysHeadSliceLandsEachModelHeadWhereTheDecodeRankHoldsIt(int heads, int p, int d) {
		HeadLayout prefill = new HeadLayout(heads, 8, p);
		HeadLayout decode = new HeadLayout(heads, 8, d);
		int page = 4;
		int headBytes = 64;
		boolean[][] filled = new boolean[d][decode.kvHeadsPerRank()];
		for (int pr = 0; pr < p; pr++) {
			for (int dr = 0; dr < d; dr++) {
				boolean feeds = p >= d ? pr / (p / d) == dr : dr / (d / p) == pr;
				if (!feeds) {
					continue;
				}
				HeadSlice s = HeadSlicing.plan(heads, p, d, pr, dr, page * prefill.kvHeadsPerRank() * headBytes,
						page * decode.kvHeadsPerRank() * headBytes, page);
				for (int i = 0; i < s.numHeads(); i++) {
					assertThat(prefill.modelKvHead(pr, s.srcHeadOffset() + i)).as("prefill %d -> decode %d, head %d",
							pr, dr, i).isEqualTo(decode.modelKvHead(dr, s.dstHeadOffset() + i));
					filled[dr][s.dstHeadOffset() + i] = true;
				}
			}
		}
		for (int dr = 0; dr < d; dr++) {
			assertThat(filled[dr]).as("decode rank %d gets every head it holds", dr).containsOnly(true);
		}
	}

	@Test
	void refusesTpSizesThatDoNotSplitTheHeads() {
		assertThatThrownBy(() -> new HeadLayout(4, 8, 3))
				.hasMessage("tpSize : 3 (expected: a divisor or a multiple of the 4 KV heads)");
		assertThatThrownBy(() -> new HeadLayout(4, 8, 16))
				.hasMessage("queryHeads : 8 (expected: a multiple of tpSize 16 and of the 4 KV heads)");
	}
}
