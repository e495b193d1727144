package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.BitSet;

import org.junit.jupiter.api.Test;

/**
 * What a failed room tells its engine to recompute: a page is landed only where it landed in every layer, a record of
 * no layer names no page landed, a layer outside the rank's is refused, and the text names the first missing pages.
 */
class LandedPagesTest {

	private static BitSet bits(int... positions) {
		BitSet b = new BitSet();
		for (int p : positions) {
			b.set(p);
		}
		return b;
	}

	@Test
	void aPageIsLandedOnlyWhereEveryLayerHasIt() {
		LandedPages p = LandedPages.of(new int[] { 9, 4, 7 }, new BitSet[] { bits(0, 1, 2), bits(1, 2), bits(0, 2) });
		assertThat(p.layers()).isEqualTo(3);
		assertThat(p.landed()).containsExactly(7);
		assertThat(p.missing()).containsExactly(9, 4);
		assertThat(p.landed(2)).containsExactly(9, 7);
		assertThat(p.missing(2)).containsExactly(4);
		assertThat(p.requested()).containsExactly(9, 4, 7);
	}

	@Test
	void aRecordOfNoLayerNamesNoPageLanded() {
		LandedPages p = LandedPages.of(new int[] { 3, 5 }, new BitSet[0]);
		assertThat(p.isKnown()).isTrue();
		assertThat(p.layers()).isZero();
		assertThat(p.landed()).isEmpty();
		assertThat(p.missing()).containsExactly(3, 5);
	}

	@Test
	void onlyTheRanksLayersCanBeAsked() {
		LandedPages p = LandedPages.of(new int[] { 3 }, new BitSet[] { bits(0), bits() });
		assertThat(p.landed(1)).isEmpty();
		assertThat(p.missing(1)).containsExactly(3);
		assertThatThrownBy(() -> p.landed(-1)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("layer : -1 (expected: 0..1)");
		assertThatThrownBy(() -> p.missing(2)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("layer : 2 (expected: 0..1)");
	}

	@Test
	void aLayerNamingAPositionPastTheRequestedPagesIsRefused() {
		assertThat(LandedPages.of(new int[] { 1, 2 }, new BitSet[] { bits(1) }).landed()).containsExactly(2);
		assertThatThrownBy(() -> LandedPages.of(new int[] { 1, 2 }, new BitSet[] { bits(0), bits(2) }))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("landedPerLayer[1]");
	}

	@Test
	void theTextCountsWhatLandedAndNamesTheFirstEightMissingPages() {
		int[] pages = new int[10];
		for (int i = 0; i < pages.length; i++) {
			pages[i] = 100 + i;
		}
		assertThat(LandedPages.of(pages, new BitSet[] { bits(0) })).hasToString(
				"LandedPages{1 of 10 landed, missing [101, 102, 103, 104, 105, 106, 107, 108, ...]}");
		assertThat(LandedPages.of(pages, new BitSet[] { bits(0, 1) })).hasToString(
				"LandedPages{2 of 10 landed, missing [102, 103, 104, 105, 106, 107, 108, 109]}");
		BitSet all = new BitSet();
		all.set(0, 10);
		assertThat(LandedPages.of(pages, new BitSet[] { all })).hasToString("LandedPages{10 of 10 landed}");
		assertThat(LandedPages.NONE).hasToString("LandedPages{not applicable}");
		assertThat(LandedPages.NONE.layers()).isZero();
		assertThat(LandedPages.NONE.landed()).isEmpty();
	}
}
