package io.kvferry.bootstrap;

import io.kvferry.ParallelLayout;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The one rule registries keep an instance's sizes by: the first registration fixes them, CP included. */
class PrefillSizesTest {

	private static final PrefillSizes FIXED = new PrefillSizes(4, 2, 3, 2, 16);

	@Test
	void theFirstRegistrationFixesTheSizes() {
		PrefillSizes first = new PrefillSizes(4, 2, 3, 2, 16);
		PrefillSizes later = new PrefillSizes(8, 1, 1, 1, 32);
		assertThat(PrefillSizes.fix(null, first)).isSameAs(first);
		assertThat(PrefillSizes.fix(first, later)).isSameAs(first);
	}

	@Test
	void declaredSizesCountContextParallelism() {
		PrefillRegistration cp = PrefillRegistration.prefill(new ParallelLayout(4, 1, 3, 2, 1, 0, 2, 1, 2, 1), "h",
				1, 16);
		assertThat(PrefillSizes.declaredBy(cp)).isEqualTo(FIXED);
		assertThat(FIXED.totalRanks()).isEqualTo(4 * 2 * 3 * 2);
		assertThat(FIXED.isComplete(47)).isFalse();
		assertThat(FIXED.isComplete(48)).isTrue();
	}

	@Test
	void aRankFitsOnlyInsideEveryFixedSize() {
		assertThat(FIXED.misfit("attn_dp_rank", 2, 1, 3, 1)).isNull();
		assertThat(FIXED.misfit("system_dp_rank", 3, 0, 0, 0)).startsWith("system_dp_rank : 3 (expected: 0..2 for "
				+ "the dp size 3 fixed by the instance's first registration)");
		assertThat(FIXED.misfit("attn_dp_rank", 0, 2, 0, 0)).startsWith("attn_cp_rank : 2 (expected: 0..1");
		assertThat(FIXED.misfit("attn_dp_rank", 0, 0, 4, 0)).startsWith("attn_tp_rank : 4 (expected: 0..3");
		assertThat(FIXED.misfit("attn_dp_rank", 0, 0, 0, 2)).startsWith("pp_rank : 2 (expected: 0..1");
	}

	@Test
	void aLayoutNamesTheFieldItsDpGroupCameFrom() {
		ParallelLayout dpAttention = new ParallelLayout(4, 0, 4, 3, 1, 0, 2, 0, 2, 0);
		assertThat(FIXED.misfit(dpAttention)).startsWith("attn_dp_rank : 3");
		ParallelLayout systemDp = new ParallelLayout(4, 0, 1, 0, 4, 3, 2, 0);
		assertThat(FIXED.misfit(systemDp)).startsWith("system_dp_rank : 3");
		assertThat(FIXED.misfit(ParallelLayout.SINGLE.withAttnCp(4, 3))).startsWith("attn_cp_rank : 3");
	}

	@Test
	void totalRanksSaturates() {
		int max = 65536;
		assertThat(new PrefillSizes(max, max, max, max, 1).totalRanks()).isEqualTo(Long.MAX_VALUE);
	}
}
