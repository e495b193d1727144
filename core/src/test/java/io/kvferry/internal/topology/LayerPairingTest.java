package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

import io.kvferry.TopologyException;

/**
 * Builds both sides' KV region lists as labels ("K3" = layer 3's K buffer, "dV0" = draft layer 0's V buffer) in
 * SGLang's order and checks that every pair joins equal labels.
 */
class LayerPairingTest {

	private static final int[] PP_SIZES = { 1, 2, 4 };

	/** MHA list: K of layers [from, to), V of the same layers, then draft K and V. */
	private static List<String> mhaList(int from, int to, int draft) {
		List<String> list = new ArrayList<>();
		IntStream.range(from, to).forEach(l -> list.add("K" + l));
		IntStream.range(from, to).forEach(l -> list.add("V" + l));
		IntStream.range(0, draft).forEach(l -> list.add("dK" + l));
		IntStream.range(0, draft).forEach(l -> list.add("dV" + l));
		return list;
	}

	/** MLA list: one latent buffer per layer of [from, to), then the draft layers'. */
	private static List<String> mlaList(int from, int to, int draft) {
		List<String> list = new ArrayList<>();
		IntStream.range(from, to).forEach(l -> list.add("L" + l));
		IntStream.range(0, draft).forEach(l -> list.add("dL" + l));
		return list;
	}

	private static void assertPairsMatch(List<String> src, List<String> dst, int start, boolean mla) {
		List<RegionPair> pairs = LayerPairing.pair(src.size(), dst.size(), start, mla);
		String where = "src=" + src + " dst=" + dst + " start=" + start;
		// Every prefill region exactly once, in list order (MHA: K pairs first, then V pairs).
		assertThat(pairs).as(where).extracting(RegionPair::src)
				.containsExactlyElementsOf(IntStream.range(0, src.size()).boxed().toList());
		Set<Integer> dstSeen = new HashSet<>();
		for (RegionPair pair : pairs) {
			assertThat(dst.get(pair.dst())).as(where + " pair " + pair).isEqualTo(src.get(pair.src()));
			assertThat(dstSeen.add(pair.dst())).as(where + " decode position reused " + pair).isTrue();
		}
	}

	@Test
	void equalListsPairPositionByPosition() {
		for (int layers : new int[] { 1, 2, 8, 32 }) {
			assertPairsMatch(mhaList(0, layers, 0), mhaList(0, layers, 0), 0, false);
			assertPairsMatch(mlaList(0, layers, 0), mlaList(0, layers, 0), 0, true);
		}
		assertThat(LayerPairing.pair(4, 4, 0, false)).containsExactly(new RegionPair(0, 0), new RegionPair(1, 1),
				new RegionPair(2, 2), new RegionPair(3, 3));
	}

	@Test
	void equalPpStagesPairPositionByPositionWhateverTheStartLayer() {
		int layers = 8;
		for (int pp : PP_SIZES) {
			int n = layers / pp;
			for (int stage = 0; stage < pp; stage++) {
				int start = stage * n;
				// Decode PP equal: the decode stage lists the same layers.
				assertPairsMatch(mhaList(start, start + n, 0), mhaList(start, start + n, 0), start, false);
				assertPairsMatch(mlaList(start, start + n, 0), mlaList(start, start + n, 0), start, true);
			}
		}
	}

	@Test
	void decodePpOneTakesEveryPrefillStageAtItsLayers() {
		for (int layers : new int[] { 8, 32 }) {
			for (int pp : PP_SIZES) {
				int n = layers / pp;
				for (int stage = 0; stage < pp; stage++) {
					int start = stage * n;
					assertPairsMatch(mhaList(start, start + n, 0), mhaList(0, layers, 0), start, false);
					assertPairsMatch(mlaList(start, start + n, 0), mlaList(0, layers, 0), start, true);
				}
			}
		}
		assertThat(LayerPairing.pair(4, 8, 2, false)).containsExactly(new RegionPair(0, 2), new RegionPair(1, 3),
				new RegionPair(2, 6), new RegionPair(3, 7));
	}

	@Test
	void unequalMlaStagesPairByStartLayer() {
		// 10 layers over stages of 4, 3 and 3 layers.
		int[][] stages = { { 0, 4 }, { 4, 7 }, { 7, 10 } };
		for (int[] s : stages) {
			assertPairsMatch(mlaList(s[0], s[1], 0), mlaList(0, 10, 0), s[0], true);
		}
	}

	@Test
	void countBasedPairingFollowsTheSeedForUnequalMhaStages() {
		// A 3-layer stage against 10 decode layers looks like "decode has draft layers" to SGLang's rule: V buffers go
		// to 3 × ⌊10/3⌋ + start = 13.. instead of 14... Documented; pairByLayer is right.
		List<RegionPair> seed = LayerPairing.pair(6, 20, 4, false);
		assertThat(seed.subList(3, 6)).extracting(RegionPair::dst).containsExactly(13, 14, 15);
		List<RegionPair> exact = LayerPairing.pairByLayer(new LayerSpan(6, 4, 0), new LayerSpan(20, 0, 0), false);
		assertThat(exact.subList(3, 6)).extracting(RegionPair::dst).containsExactly(14, 15, 16);
		assertPairsMatchByLayer(mhaList(4, 7, 0), 4, 0, mhaList(0, 10, 0), 0, 0, false);
	}

	@Test
	void decodeWithDraftLayersWhilePrefillHasNone() {
		// The decode list's layer count (main + draft) is not a multiple of a stage's: SGLang's multiplier_ratio rule.
		for (int layers : new int[] { 8, 32 }) {
			for (int pp : PP_SIZES) {
				int n = layers / pp;
				for (int stage = 0; stage < pp; stage++) {
					int start = stage * n;
					assertThat((layers + 1) % n).isNotZero();
					assertPairsMatch(mhaList(start, start + n, 0), mhaList(0, layers, 1), start, false);
					assertPairsMatch(mlaList(start, start + n, 0), mlaList(0, layers, 1), start, true);
				}
			}
		}
		// 2 prefill layers, decode 2 + 1 draft: [K0 K1 V0 V1 dK0 dV0].
		assertThat(LayerPairing.pair(4, 6, 0, false)).containsExactly(new RegionPair(0, 0), new RegionPair(1, 1),
				new RegionPair(2, 2), new RegionPair(3, 3));
	}

	@Test
	void draftLayersOnBothSidesPairOneToOne() {
		assertPairsMatch(mhaList(0, 8, 1), mhaList(0, 8, 1), 0, false);
		assertPairsMatch(mlaList(0, 8, 1), mlaList(0, 8, 1), 0, true);
	}

	private static void assertPairsMatchByLayer(List<String> src, int srcStart, int srcDraft, List<String> dst,
			int dstStart, int dstDraft, boolean mla) {
		List<RegionPair> pairs = LayerPairing.pairByLayer(new LayerSpan(src.size(), srcStart, srcDraft),
				new LayerSpan(dst.size(), dstStart, dstDraft), mla);
		String where = "src=" + src + " dst=" + dst;
		assertThat(pairs).as(where).extracting(RegionPair::src)
				.containsExactlyElementsOf(IntStream.range(0, src.size()).boxed().toList());
		assertThat(pairs).as(where).allSatisfy(p -> assertThat(dst.get(p.dst())).isEqualTo(src.get(p.src())));
		assertThat(pairs.stream().map(RegionPair::dst).distinct().count()).as(where).isEqualTo(src.size());
	}

	/** Stage boundaries of {@code layers} split over {@code pp} stages, the first {@code layers mod pp} one larger. */
	private static int[] stageStarts(int layers, int pp) {
		int[] starts = new int[pp + 1];
		for (int s = 0; s < pp; s++) {
			starts[s + 1] = starts[s] + layers / pp + (s < layers % pp ? 1 : 0);
		}
		return starts;
	}

	@Test
	void pairByLayerIsRightForEveryStageSplitAndDraftCount() {
		int checked = 0;
		for (int layers : new int[] { 8, 10, 32, 61 }) {
			for (int pp = 1; pp <= 4; pp++) {
				int[] starts = stageStarts(layers, pp);
				for (int draft = 0; draft <= 3; draft++) {
					for (int s = 0; s < pp; s++) {
						int from = starts[s];
						int to = starts[s + 1];
						for (boolean mla : new boolean[] { false, true }) {
							// Decode PP 1 with draft layers, prefill stage without.
							List<String> src = mla ? mlaList(from, to, 0) : mhaList(from, to, 0);
							List<String> whole = mla ? mlaList(0, layers, draft) : mhaList(0, layers, draft);
							assertPairsMatchByLayer(src, from, 0, whole, 0, draft, mla);
							// Decode PP equal: the decode stage holds the same layers (and draft layers on both).
							boolean last = s == pp - 1;
							int stageDraft = last ? draft : 0;
							List<String> stage = mla ? mlaList(from, to, stageDraft) : mhaList(from, to, stageDraft);
							assertPairsMatchByLayer(stage, from, stageDraft, stage, from, stageDraft, mla);
							assertPairsMatchByLayer(src, from, 0, stage, from, stageDraft, mla);
							checked += 3;
						}
					}
				}
			}
		}
		assertThat(checked).isEqualTo(4 * 10 * 4 * 2 * 3);
	}

	@Test
	void pairByLayerRejectsLayersTheDecodeDoesNotHold() {
		assertThatThrownBy(() -> LayerPairing.pairByLayer(new LayerSpan(4, 6, 0), new LayerSpan(4, 4, 0), false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill layers 6..7")
				.hasMessageContaining("decode list of layers 4..5");
		assertThat(LayerPairing.pairByLayer(new LayerSpan(4, 6, 0), new LayerSpan(8, 4, 0), false))
				.containsExactly(new RegionPair(0, 2), new RegionPair(1, 3), new RegionPair(2, 6),
						new RegionPair(3, 7));
		assertThatThrownBy(() -> LayerPairing.pairByLayer(new LayerSpan(4, 2, 0), new LayerSpan(8, 4, 0), true))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill layers 2..5");
		assertThatThrownBy(() -> LayerPairing.pairByLayer(new LayerSpan(4, Integer.MAX_VALUE, 0),
				new LayerSpan(8, 0, 0), false)).isInstanceOf(TopologyException.class);
	}

	@Test
	void pairByLayerRejectsMismatchedDraftLayersAndBadCounts() {
		assertThatThrownBy(() -> LayerPairing.pairByLayer(new LayerSpan(10, 0, 1), new LayerSpan(12, 0, 2), false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill has 1 draft layers, decode 2");
		assertThatThrownBy(() -> LayerPairing.pairByLayer(new LayerSpan(5, 0, 0), new LayerSpan(8, 0, 0), false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("MHA KV region count 5");
		assertThatThrownBy(() -> LayerPairing.pairByLayer(new LayerSpan(2, 0, 0), new LayerSpan(2, 0, 3), true))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("too small for 3 draft layers");
		assertThatThrownBy(() -> LayerPairing.pairByLayer(new LayerSpan(0, 0, 0), new LayerSpan(2, 0, 0), true))
				.isInstanceOf(TopologyException.class);
		assertThatThrownBy(() -> LayerPairing.pairByLayer(null, new LayerSpan(2, 0, 0), true))
				.isInstanceOf(NullPointerException.class).hasMessage("prefill");
		assertThatThrownBy(() -> LayerPairing.pairByLayer(new LayerSpan(2, 0, 0), null, true))
				.isInstanceOf(NullPointerException.class).hasMessage("decode");
	}

	@Test
	void pairByLayerAgreesWithTheSeedRuleWhereTheSeedIsRight() {
		for (int pp : PP_SIZES) {
			int n = 32 / pp;
			for (int stage = 0; stage < pp; stage++) {
				for (boolean mla : new boolean[] { false, true }) {
					int src = mla ? n : 2 * n;
					int dst = mla ? 33 : 66;
					List<RegionPair> exact = LayerPairing.pairByLayer(new LayerSpan(src, stage * n, 0),
							new LayerSpan(dst, 0, 1), mla);
					assertThat(exact).isEqualTo(LayerPairing.pair(src, dst, stage * n, mla));
				}
			}
		}
	}

	@Test
	void layerSpanValidatesItsValues() {
		assertThatIllegalArgumentException().isThrownBy(() -> new LayerSpan(-1, 0, 0))
				.withMessage("regionCount : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> new LayerSpan(2, -1, 0))
				.withMessage("startLayer : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> new LayerSpan(2, 0, -1))
				.withMessage("draftLayers : -1 (expected: >= 0)");
		assertThat(new LayerSpan(10, 4, 1).mainLayers(false)).isEqualTo(4);
		assertThat(new LayerSpan(10, 4, 1).mainLayers(true)).isEqualTo(9);
	}

	@Test
	void addressesOfPairedRegionsAreComputedIn64Bits() {
		// 4 GiB-ish regions of 96 MiB pages: page 40 starts 3.75 GiB in, beyond 2^31.
		int itemLen = 96 << 20;
		long regionLen = 64L * itemLen;
		long srcBase = 0x7f00_0000_0000L;
		long dstBase = 0x7e00_0000_0000L;
		List<RegionPair> pairs = LayerPairing.pair(4, 8, 2, false);
		List<PageRun> runs = PageRuns.group(new int[] { 40, 41, 63 }, new int[] { 22, 23, 50 });
		assertThat(runs).containsExactly(new PageRun(40, 22, 2), new PageRun(63, 50, 1));
		for (RegionPair pair : pairs) {
			long srcRegion = srcBase + pair.src() * regionLen;
			long dstRegion = dstBase + pair.dst() * regionLen;
			PageRun first = runs.get(0);
			long src = srcRegion + first.srcOffset(itemLen);
			long dst = dstRegion + first.dstOffset(itemLen);
			assertThat(src).isEqualTo(srcRegion + 40L * 96 * 1024 * 1024);
			assertThat(dst).isEqualTo(dstRegion + 22L * 96 * 1024 * 1024);
			assertThat(first.srcOffset(itemLen)).isGreaterThan(Integer.MAX_VALUE);
			assertThat(first.byteLength(itemLen)).isEqualTo(2L * itemLen).isGreaterThan(Integer.MAX_VALUE / 16);
			PageRun last = runs.get(1);
			assertThat(last.srcOffset(itemLen) + last.byteLength(itemLen)).isEqualTo(regionLen);
			assertThat(dstRegion + last.dstOffset(itemLen)).isEqualTo(dstRegion + 50L * itemLen);
		}
		// What 32-bit arithmetic would have produced instead.
		assertThat(40 * itemLen).isNotEqualTo(runs.get(0).srcOffset(itemLen));
	}

	@Test
	void rejectsPrefillWithMoreLayersThanDecode() {
		assertThatThrownBy(() -> LayerPairing.pair(16, 8, 0, false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("count=16")
				.hasMessageContaining("count=8");
		assertThatThrownBy(() -> LayerPairing.pair(8, 4, 0, true)).isInstanceOf(TopologyException.class)
				.hasMessageContaining("MLA");
	}

	@Test
	void rejectsAStageThatRunsPastTheDecodeLayers() {
		// Prefill stage of 2 layers starting at layer 7 against an 8-layer decode.
		assertThatThrownBy(() -> LayerPairing.pair(4, 16, 7, false))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("MHA K")
				.hasMessageContaining("start layer=7")
				.hasMessageContaining("7..8");
		assertThatThrownBy(() -> LayerPairing.pair(2, 8, 7, true))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("7..8")
				.hasMessageContaining("0..7");
		// No integer wrap-around for absurd start layers.
		assertThatThrownBy(() -> LayerPairing.pair(4, 16, Integer.MAX_VALUE, false))
				.isInstanceOf(TopologyException.class);
		assertThatThrownBy(() -> LayerPairing.pair(2, 8, Integer.MAX_VALUE, true))
				.isInstanceOf(TopologyException.class);
	}

	@Test
	void neverThrowsIndexOutOfBoundsForAnyCounts() {
		for (int src = 1; src <= 12; src++) {
			for (int dst = 0; dst <= 12; dst++) {
				for (int start = 0; start <= 12; start++) {
					for (boolean mla : new boolean[] { false, true }) {
						List<RegionPair> pairs;
						try {
							pairs = LayerPairing.pair(src, dst, start, mla);
						}
						catch (TopologyException expected) {
							continue;
						}
						int srcCount = src;
						int dstCount = dst;
						assertThat(pairs).hasSize(src).allSatisfy(p -> {
							assertThat(p.src()).isBetween(0, srcCount - 1);
							assertThat(p.dst()).isBetween(0, dstCount - 1);
						});
						assertThat(pairs.stream().map(RegionPair::dst).distinct().count()).isEqualTo(src);
					}
				}
			}
		}
	}

	@Test
	void rejectsOddMhaCountsAndEmptyPrefill() {
		assertThatThrownBy(() -> LayerPairing.pair(3, 8, 0, false)).isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill=3");
		assertThatThrownBy(() -> LayerPairing.pair(4, 7, 0, false)).isInstanceOf(TopologyException.class)
				.hasMessageContaining("decode=7");
		assertThatThrownBy(() -> LayerPairing.pair(0, 8, 0, false)).isInstanceOf(TopologyException.class);
		assertThatThrownBy(() -> LayerPairing.pair(0, 0, 0, true)).isInstanceOf(TopologyException.class);
		assertThat(LayerPairing.pair(3, 5, 2, true)).containsExactly(new RegionPair(0, 2), new RegionPair(1, 3),
				new RegionPair(2, 4));
	}

	@Test
	void rejectsNegativeArguments() {
		assertThatIllegalArgumentException().isThrownBy(() -> LayerPairing.pair(-2, 8, 0, false))
				.withMessage("srcRegionCount : -2 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> LayerPairing.pair(2, -8, 0, false))
				.withMessage("dstRegionCount : -8 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> LayerPairing.pair(2, 8, -1, true))
				.withMessage("prefillStartLayer : -1 (expected: >= 0)");
	}

	@Test
	void regionPairRejectsNegativePositions() {
		assertThatIllegalArgumentException().isThrownBy(() -> new RegionPair(-1, 0))
				.withMessage("src : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> new RegionPair(0, -1))
				.withMessage("dst : -1 (expected: >= 0)");
	}
}
