package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.PrefillParallelInfo;

class RankMappingTest {

	private static final int[] TP_SIZES = { 1, 2, 4, 8 };
	private static final int[] PREFILL_PP_SIZES = { 1, 2, 4 };
	private static final int PAGE = 16;

	private static PrefillParallelInfo prefill(int tp, int pp) {
		return new PrefillParallelInfo(tp, 1, pp, PAGE);
	}

	private static ParallelLayout decode(int tp, int pp, int ppRank) {
		return new ParallelLayout(tp, 0, 1, 0, 1, 0, pp, ppRank);
	}

	private static List<Integer> decodePpSizes(int prefillPp) {
		return prefillPp == 1 ? List.of(1) : List.of(1, prefillPp);
	}

	@Test
	void everyTopologyMatchesTheRuleTable() {
		int checked = 0;
		for (int p : TP_SIZES) {
			for (int d : TP_SIZES) {
				for (boolean mla : new boolean[] { false, true }) {
					for (int prefillPp : PREFILL_PP_SIZES) {
						for (int decodePp : decodePpSizes(prefillPp)) {
							for (int decodePpRank = 0; decodePpRank < decodePp; decodePpRank++) {
								// Engine ranks beyond D (other DP groups) exercise "e mod D".
								for (int e = 0; e < 3 * d; e++) {
									RankMapping m = RankMapping.plan(prefill(p, prefillPp), decode(d, decodePp,
											decodePpRank), e, PAGE, mla);
									assertMatchesTable(m, p, d, mla, prefillPp, decodePp, decodePpRank, e);
									checked++;
								}
							}
						}
					}
				}
			}
		}
		// 4 prefill TP × (3+6+12+24 engine ranks) × 2 backends × (1 + (1+2) + (1+4)) stage configurations.
		assertThat(checked).isEqualTo(4 * 45 * 2 * 9);
	}

	private static void assertMatchesTable(RankMapping m, int p, int d, boolean mla, int prefillPp, int decodePp,
			int decodePpRank, int e) {
		String where = "P=" + p + " D=" + d + " mla=" + mla + " prefillPp=" + prefillPp + " decodePp=" + decodePp
				+ " decodePpRank=" + decodePpRank + " e=" + e;
		int local = e % d;
		List<Integer> tpTargets = new ArrayList<>();
		int dstInfo;
		int tpResponses;
		if (p == d) {
			tpTargets.add(local);
			dstInfo = 1;
			tpResponses = 1;
		}
		else if (d > p) {
			tpTargets.add(local / (d / p));
			dstInfo = d / p;
			tpResponses = 1;
		}
		else {
			for (int k = 0; k < p / d; k++) {
				tpTargets.add(local * (p / d) + k);
			}
			dstInfo = 1;
			tpResponses = mla ? 1 : p / d;
		}
		List<Integer> ppTargets = new ArrayList<>();
		if (decodePp == prefillPp) {
			ppTargets.add(decodePpRank);
		}
		else {
			for (int s = prefillPp - 1; s >= 0; s--) {
				ppTargets.add(s);
			}
		}
		List<RankTarget> expected = new ArrayList<>();
		for (int tp : tpTargets) {
			for (int pp : ppTargets) {
				expected.add(new RankTarget(tp, pp, mla && tp != tpTargets.get(0)));
			}
		}
		assertThat(m.targets()).as(where).containsExactlyElementsOf(expected);
		assertThat(m.requiredDstInfoNum()).as(where).isEqualTo(dstInfo);
		assertThat(m.requiredPrefillResponseNum()).as(where).isEqualTo(tpResponses * ppTargets.size());

		// Independent properties of any plan.
		assertThat(m.targets()).as(where).allSatisfy(t -> {
			assertThat(t.tpRank()).isBetween(0, p - 1);
			assertThat(t.ppRank()).isBetween(0, prefillPp - 1);
		});
		assertThat(m.targets()).as(where).doesNotHaveDuplicates();
		assertThat(m.targets().get(0).dummy()).as(where).isFalse();
		Set<Integer> reporting = new HashSet<>();
		m.realTargets().forEach(t -> reporting.add(t.uniqueRank(prefillPp)));
		// Decode counts distinct prefill ranks: exactly the real targets must be needed.
		assertThat(m.requiredPrefillResponseNum()).as(where).isEqualTo(reporting.size());
		assertThat(m.targets().stream().anyMatch(RankTarget::dummy)).as(where).isEqualTo(mla && p > d);
	}

	@Test
	void targetsListTpAscendingAndPpDescending() {
		RankMapping m = RankMapping.plan(prefill(4, 4), decode(2, 1, 0), 1, PAGE, false);
		assertThat(m.targets()).containsExactly(new RankTarget(2, 3, false), new RankTarget(2, 2, false),
				new RankTarget(2, 1, false), new RankTarget(2, 0, false), new RankTarget(3, 3, false),
				new RankTarget(3, 2, false), new RankTarget(3, 1, false), new RankTarget(3, 0, false));
		assertThat(m.requiredDstInfoNum()).isEqualTo(1);
		assertThat(m.requiredPrefillResponseNum()).isEqualTo(8);
	}

	@Test
	void mlaWithLargerPrefillTpMakesAllButTheFirstRankDummiesOnEveryStage() {
		RankMapping m = RankMapping.plan(prefill(8, 2), decode(2, 1, 0), 3, PAGE, true);
		assertThat(m.targets()).containsExactly(new RankTarget(4, 1, false), new RankTarget(4, 0, false),
				new RankTarget(5, 1, true), new RankTarget(5, 0, true), new RankTarget(6, 1, true),
				new RankTarget(6, 0, true), new RankTarget(7, 1, true), new RankTarget(7, 0, true));
		assertThat(m.realTargets()).containsExactly(new RankTarget(4, 1, false), new RankTarget(4, 0, false));
		assertThat(m.requiredPrefillResponseNum()).isEqualTo(2);
	}

	@Test
	void largerDecodeTpSharesOnePrefillRankAmongItsGroup() {
		for (int e = 0; e < 8; e++) {
			RankMapping m = RankMapping.plan(prefill(2, 1), decode(8, 1, 0), e, PAGE, false);
			assertThat(m.targets()).containsExactly(new RankTarget(e / 4, 0, false));
			assertThat(m.requiredDstInfoNum()).isEqualTo(4);
			assertThat(m.requiredPrefillResponseNum()).isEqualTo(1);
		}
	}

	@Test
	void equalPpTargetsOnlyTheDecodeStage() {
		for (int stage = 0; stage < 4; stage++) {
			RankMapping m = RankMapping.plan(prefill(2, 4), decode(2, 4, stage), 1, PAGE, false);
			assertThat(m.targets()).containsExactly(new RankTarget(1, stage, false));
			assertThat(m.requiredPrefillResponseNum()).isEqualTo(1);
		}
	}

	@Test
	void nonMlaLargerPrefillTpCoversEveryPrefillRankOncePerDecodeGroup() {
		for (int p : TP_SIZES) {
			for (int d : TP_SIZES) {
				if (p <= d) {
					continue;
				}
				for (int prefillPp : PREFILL_PP_SIZES) {
					for (int decodePp : decodePpSizes(prefillPp)) {
						Map<RankTarget, Integer> hits = new HashMap<>();
						for (int decodePpRank = 0; decodePpRank < decodePp; decodePpRank++) {
							for (int e = 0; e < d; e++) {
								RankMapping m = RankMapping.plan(prefill(p, prefillPp), decode(d, decodePp,
										decodePpRank), e, PAGE, false);
								m.targets().forEach(t -> hits.merge(t, 1, Integer::sum));
								assertThat(m.requiredDstInfoNum()).isEqualTo(1);
							}
						}
						assertThat(hits).as("P=%d D=%d pp=%d/%d", p, d, prefillPp, decodePp)
								.hasSize(p * prefillPp)
								.allSatisfy((t, n) -> assertThat(n).isEqualTo(1));
					}
				}
			}
		}
	}

	@Test
	void mlaLargerPrefillTpReachesEveryPrefillRankOnceAndReadsEachStageFromOneRank() {
		for (int p : TP_SIZES) {
			for (int d : TP_SIZES) {
				if (p <= d) {
					continue;
				}
				Map<Integer, Integer> hits = new HashMap<>();
				for (int e = 0; e < d; e++) {
					RankMapping m = RankMapping.plan(prefill(p, 2), decode(d, 1, 0), e, PAGE, true);
					m.targets().forEach(t -> hits.merge(t.tpRank() * 2 + t.ppRank(), 1, Integer::sum));
					assertThat(m.realTargets()).hasSize(2)
							.allSatisfy(t -> assertThat(t.tpRank()).isEqualTo(m.targets().get(0).tpRank()));
				}
				// Every prefill rank gets the room (really or as a dummy), so each reaches its consensus.
				assertThat(hits).hasSize(p * 2).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
			}
		}
	}

	@Test
	void largerDecodeTpTargetsEachPrefillRankFromExactlyDstInfoNumDecodeRanks() {
		for (int p : TP_SIZES) {
			for (int d : TP_SIZES) {
				if (d <= p) {
					continue;
				}
				for (boolean mla : new boolean[] { false, true }) {
					Map<Integer, Integer> hits = new HashMap<>();
					int dstInfo = 0;
					for (int e = 0; e < d; e++) {
						RankMapping m = RankMapping.plan(prefill(p, 1), decode(d, 1, 0), e, PAGE, mla);
						assertThat(m.targets()).hasSize(1);
						hits.merge(m.targets().get(0).tpRank(), 1, Integer::sum);
						dstInfo = m.requiredDstInfoNum();
					}
					int expected = dstInfo;
					assertThat(expected).isEqualTo(d / p);
					assertThat(hits).hasSize(p).allSatisfy((tp, n) -> assertThat(n).isEqualTo(expected));
				}
			}
		}
	}

	@Test
	void equalTpIsOneToOne() {
		for (int tp : TP_SIZES) {
			Set<Integer> seen = new HashSet<>();
			for (int e = 0; e < tp; e++) {
				seen.add(RankMapping.plan(prefill(tp, 1), decode(tp, 1, 0), e, PAGE, false).targets().get(0).tpRank());
			}
			assertThat(seen).containsExactlyInAnyOrderElementsOf(IntStream.range(0, tp).boxed().toList());
		}
	}

	@Test
	void pageSizeOneIsAPageSize() {
		// One token per page: SGLang's default page size.
		RankMapping m = RankMapping.plan(new PrefillParallelInfo(1, 1, 1, 1), decode(1, 1, 0), 0, 1, false);
		assertThat(m.targets()).hasSize(1);
		assertThatThrownBy(() -> RankMapping.plan(new PrefillParallelInfo(1, 1, 1, 1), decode(1, 1, 0), 0, 0, false))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("decodePageSize : 0 (expected: >= 1)");
	}

	@Test
	void rejectsTpSizesThatDoNotDivide() {
		assertThatThrownBy(() -> RankMapping.plan(prefill(2, 1), decode(3, 1, 0), 0, PAGE, false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill attn_tp_size=2")
				.hasMessageContaining("decode attn_tp_size=3");
		assertThatThrownBy(() -> RankMapping.plan(prefill(6, 1), decode(4, 1, 0), 0, PAGE, true))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("=6")
				.hasMessageContaining("=4");
	}

	@Test
	void rejectsPpCombinationsOtherThanEqualOrDecodeOne() {
		int[][] bad = { { 1, 2 }, { 2, 4 }, { 4, 2 }, { 1, 4 }, { 3, 2 } };
		for (int[] pp : bad) {
			assertThatThrownBy(() -> RankMapping.plan(prefill(2, pp[0]), decode(2, pp[1], 0), 0, PAGE, false))
					.isInstanceOf(TopologyException.class)
					.hasMessageContaining("decode pp_size=" + pp[1])
					.hasMessageContaining("prefill pp_size=" + pp[0]);
		}
	}

	@Test
	void rejectsDifferentPageSizesNamingBothUnlessBothArePowersOfTwo() {
		assertThat(RankMapping.plan(new PrefillParallelInfo(2, 1, 1, 32), decode(2, 1, 0), 0, 16, false).targets())
				.hasSize(1);
		assertThatThrownBy(() -> RankMapping.plan(new PrefillParallelInfo(2, 1, 1, 48), decode(2, 1, 0), 0, 16, false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill page_size=48")
				.hasMessageContaining("decode page_size=16");
		assertThatThrownBy(() -> RankMapping.plan(new PrefillParallelInfo(2, 1, 1, 16), decode(2, 1, 0), 0, 12, false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("not both powers of two");
	}

	@Test
	void rejectsBadArguments() {
		assertThatNullPointerException().isThrownBy(() -> RankMapping.plan(null, decode(1, 1, 0), 0, PAGE, false))
				.withMessage("prefill");
		assertThatNullPointerException().isThrownBy(() -> RankMapping.plan(prefill(1, 1), null, 0, PAGE, false))
				.withMessage("decode");
		assertThatIllegalArgumentException()
				.isThrownBy(() -> RankMapping.plan(prefill(1, 1), decode(1, 1, 0), -1, PAGE, false))
				.withMessage("decodeEngineRank : -1 (expected: >= 0)");
		assertThatIllegalArgumentException()
				.isThrownBy(() -> RankMapping.plan(prefill(1, 1), decode(1, 1, 0), 0, 0, false))
				.withMessage("decodePageSize : 0 (expected: >= 1)");
	}

	@Test
	void constructorValidatesAndCopiesTargets() {
		List<RankTarget> list = new ArrayList<>(List.of(new RankTarget(0, 0, false)));
		RankMapping m = new RankMapping(list, 1, 1);
		list.add(new RankTarget(1, 0, false));
		assertThat(m.targets()).hasSize(1);
		assertThatThrownBy(() -> m.targets().add(new RankTarget(2, 0, false)))
				.isInstanceOf(UnsupportedOperationException.class);
		assertThatIllegalArgumentException().isThrownBy(() -> new RankMapping(List.of(), 1, 1))
				.withMessageContaining("targets : empty");
		assertThatIllegalArgumentException().isThrownBy(() -> new RankMapping(m.targets(), 0, 1))
				.withMessage("requiredDstInfoNum : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> new RankMapping(m.targets(), 1, 0))
				.withMessage("requiredPrefillResponseNum : 0 (expected: >= 1)");
		assertThatNullPointerException().isThrownBy(() -> new RankMapping(null, 1, 1)).withMessage("targets");
	}

	@Test
	void rankTargetRejectsNegativeRanks() {
		assertThatIllegalArgumentException().isThrownBy(() -> new RankTarget(-1, 0, false))
				.withMessage("tpRank : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> new RankTarget(0, -2, true))
				.withMessage("ppRank : -2 (expected: >= 0)");
	}

	@Test
	void prefillDpRankUsesTheHintWhenGiven() {
		for (int dp = 1; dp <= 8; dp++) {
			for (int hint = 0; hint < dp; hint++) {
				assertThat(RankMapping.prefillDpRank(12345L, hint, dp)).isEqualTo(hint);
			}
		}
	}

	@Test
	void prefillDpRankIsRoomModDpSizeWithoutHint() {
		for (int dp = 1; dp <= 8; dp++) {
			for (long room = 0; room < 100; room++) {
				assertThat(RankMapping.prefillDpRank(room, null, dp)).isEqualTo((int) (room % dp));
			}
		}
		assertThat(RankMapping.prefillDpRank(Long.MAX_VALUE, null, 7)).isEqualTo((int) (Long.MAX_VALUE % 7));
	}

	@Test
	void prefillDpRankOfANegativeRoomFollowsPythonModulo() {
		assertThat(RankMapping.prefillDpRank(-1, null, 4)).isEqualTo(3);
		assertThat(RankMapping.prefillDpRank(-8, null, 4)).isZero();
		assertThat(RankMapping.prefillDpRank(Long.MIN_VALUE, null, 3))
				.isEqualTo((int) Math.floorMod(Long.MIN_VALUE, 3L));
		for (long room = -50; room < 0; room++) {
			assertThat(RankMapping.prefillDpRank(room, null, 6)).isBetween(0, 5);
		}
	}

	@Test
	void prefillDpRankRejectsAHintOutsideTheDpSize() {
		assertThatThrownBy(() -> RankMapping.prefillDpRank(7, 4, 4))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill dp rank 4")
				.hasMessageContaining("dp_size=4");
		assertThatThrownBy(() -> RankMapping.prefillDpRank(7, -1, 4)).isInstanceOf(TopologyException.class);
		assertThatIllegalArgumentException().isThrownBy(() -> RankMapping.prefillDpRank(7, null, 0))
				.withMessage("prefillDpSize : 0 (expected: >= 1)");
	}

	@Test
	void prefillUniqueRankIsABijectionOverTpAndPp() {
		for (int tp : TP_SIZES) {
			for (int pp : PREFILL_PP_SIZES) {
				Set<Integer> seen = new HashSet<>();
				for (int t = 0; t < tp; t++) {
					for (int s = 0; s < pp; s++) {
						int unique = RankMapping.prefillUniqueRank(t, pp, s);
						assertThat(unique).isEqualTo(t * pp + s);
						assertThat(new RankTarget(t, s, false).uniqueRank(pp)).isEqualTo(unique);
						seen.add(unique);
					}
				}
				assertThat(seen).hasSize(tp * pp).allSatisfy(u -> assertThat(u).isBetween(0, tp * pp - 1));
			}
		}
	}

	@Test
	void prefillUniqueRankRejectsOutOfRangeArguments() {
		assertThatIllegalArgumentException().isThrownBy(() -> RankMapping.prefillUniqueRank(-1, 1, 0))
				.withMessage("tpRank : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> RankMapping.prefillUniqueRank(0, 0, 0))
				.withMessage("ppSize : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> RankMapping.prefillUniqueRank(0, 2, 2))
				.withMessage("ppRank : 2 (expected: 0..1)");
		assertThatThrownBy(() -> RankMapping.prefillUniqueRank(Integer.MAX_VALUE, 2, 0))
				.isInstanceOf(ArithmeticException.class);
	}
}
