package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import org.junit.jupiter.api.Test;

/** How CP ranks share a room, and how decode plans its targets over them. */
class CpSplitTest {

	@Test
	void theFirstTotalModCpRanksGetOneMore() {
		assertThat(CpSplit.range(5, 2, 0)).containsExactly(0, 3);
		assertThat(CpSplit.range(5, 2, 1)).containsExactly(3, 5);
		assertThat(CpSplit.range(7, 3, 0)).containsExactly(0, 3);
		assertThat(CpSplit.range(7, 3, 1)).containsExactly(3, 5);
		assertThat(CpSplit.range(7, 3, 2)).containsExactly(5, 7);
		assertThat(CpSplit.range(1, 4, 3)).containsExactly(1, 1);
		assertThat(CpSplit.range(0, 2, 1)).containsExactly(0, 0);
		assertThatThrownBy(() -> CpSplit.range(4, 2, 2)).hasMessageContaining("cpRank=2");
	}

	@Test
	void decodeAsksEveryCpRankOnlyWhenTheyAllSend() {
		RankMapping base = RankMapping.plan(new PrefillParallelInfo(2, 1, 1, 16), ParallelLayout.tp(1, 0), 0, 16,
				false);
		assertThat(base.spreadOverCp(1)).isSameAs(base);
		RankMapping all = base.spreadOverCp(2);
		assertThat(all.targets()).containsExactly(new RankTarget(0, 0, false, 0), new RankTarget(1, 0, false, 0),
				new RankTarget(0, 0, false, 1), new RankTarget(1, 0, false, 1));
		assertThat(all.requiredPrefillResponseNum()).isEqualTo(4);
		assertThat(all.requiredDstInfoNum()).isEqualTo(1);
		// SGLang's prefill_unique_rank: tp × (pp × cp) + pp × cp + cp.
		assertThat(new RankTarget(1, 1, false, 1).uniqueRank(2, 2)).isEqualTo(7);
		assertThat(RankMapping.prefillUniqueRank(0, 1, 0, 2, 1)).isEqualTo(1);
		List<Integer> unique = all.targets().stream().map(t -> t.uniqueRank(1, 2)).toList();
		assertThat(unique).doesNotHaveDuplicates();
	}

	@Test
	void decodeContextParallelismNeedsMla() {
		assertThatThrownBy(() -> RankMapping.plan(new PrefillParallelInfo(1, 1, 1, 16),
				ParallelLayout.tp(1, 0).withAttnCp(2, 0), 0, 16, false)).isInstanceOf(TopologyException.class)
				.hasMessage("Unsupported PD DCP topology: 1 -> 2 (decode DCP requires an MLA or hybrid-MLA KV pool)");
	}
}
