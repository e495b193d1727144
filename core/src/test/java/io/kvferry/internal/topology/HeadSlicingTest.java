package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import io.kvferry.bootstrap.PrefillParallelInfo;

class HeadSlicingTest {

	private static final int[] SIZES = { 1, 2, 4, 8 };
	private static final int HEAD_BYTES = 6;
	private static final int PAGE = 3;

	@FunctionalInterface
	interface Planner {
		HeadSlice plan(int h, int p, int d, int prefillRank, int decodeRank, int srcItemLen, int dstItemLen, int page);
	}

	/** Model heads a rank of a TP-{@code tp} instance holds, by the model's definition (not the code under test). */
	private static List<Integer> headsOf(int rank, int tp, int heads) {
		List<Integer> held = new ArrayList<>();
		if (tp <= heads) {
			for (int k = rank * (heads / tp); k < (rank + 1) * (heads / tp); k++) {
				held.add(k);
			}
		}
		else {
			held.add(rank / (tp / heads));
		}
		return held;
	}

	/** Model heads a rank of a TP-{@code tp} instance holds, by the model's definition (not the code tested). */
	private static boolean prefillHolds(int rank, int head, int p, int heads) {
		if (p <= heads) {
			return head / (heads / p) == rank;
		}
		return rank >= head * (p / heads) && rank < (head + 1) * (p / heads);
	}

	private static int value(int head, int token, int b) {
		return head * 1000 + token * 10 + b;
	}

	/**
	 * Moves one page of one layer from every prefill rank to every decode rank through the planned slices and returns
	 * every discrepancy found.
	 */
	private static List<String> simulate(Planner planner) {
		List<String> problems = new ArrayList<>();
		for (int h : SIZES) {
			for (int p : SIZES) {
				for (int d : SIZES) {
					simulate(planner, h, p, d, problems);
				}
			}
		}
		return problems;
	}

	private static void simulate(Planner planner, int h, int p, int d, List<String> problems) {
		String config = "H=" + h + " P=" + p + " D=" + d;
		int srcTokenBytes = headsOf(0, p, h).size() * HEAD_BYTES;
		int dstTokenBytes = headsOf(0, d, h).size() * HEAD_BYTES;
		int[][] prefillPages = new int[p][PAGE * srcTokenBytes];
		for (int pr = 0; pr < p; pr++) {
			List<Integer> held = headsOf(pr, p, h);
			for (int t = 0; t < PAGE; t++) {
				for (int pos = 0; pos < held.size(); pos++) {
					for (int b = 0; b < HEAD_BYTES; b++) {
						prefillPages[pr][t * srcTokenBytes + pos * HEAD_BYTES + b] = value(held.get(pos), t, b);
					}
				}
			}
		}
		for (int dr = 0; dr < d; dr++) {
			int[] page = new int[PAGE * dstTokenBytes];
			int[] writes = new int[PAGE * dstTokenBytes];
			Arrays.fill(page, -1);
			RankMapping mapping = RankMapping.plan(new PrefillParallelInfo(p, 1, 1, PAGE), ParallelLayout.tp(d, dr),
					dr, PAGE, false);
			List<Integer> targets = mapping.targets().stream().map(RankTarget::tpRank).toList();
			for (int pr : targets) {
				HeadSlice slice = planner.plan(h, p, d, pr, dr, PAGE * srcTokenBytes, PAGE * dstTokenBytes, PAGE);
				for (int t = 0; t < PAGE; t++) {
					int from = t * srcTokenBytes + slice.srcByteOffset();
					int to = t * dstTokenBytes + slice.dstByteOffset();
					int len = slice.sliceBytes();
					if (slice.srcByteOffset() + len > srcTokenBytes || slice.dstByteOffset() + len > dstTokenBytes) {
						problems.add(config + " p=" + pr + " d=" + dr + ": slice " + slice + " leaves the token");
						continue;
					}
					for (int i = 0; i < len; i++) {
						int v = prefillPages[pr][from + i];
						if (!prefillHolds(pr, v / 1000, p, h)) {
							problems.add(config + ": prefill rank " + pr + " sent head " + v / 1000
									+ " it does not hold");
						}
						page[to + i] = v;
						writes[to + i]++;
					}
				}
			}
			List<Integer> held = headsOf(dr, d, h);
			for (int t = 0; t < PAGE; t++) {
				for (int pos = 0; pos < held.size(); pos++) {
					int head = held.get(pos);
					// Every target prefill rank that holds the head writes it once; no other rank writes there.
					long holders = targets.stream().filter(pr -> prefillHolds(pr, head, p, h)).count();
					for (int b = 0; b < HEAD_BYTES; b++) {
						int at = t * dstTokenBytes + pos * HEAD_BYTES + b;
						if (page[at] != value(head, t, b) || writes[at] != holders || holders == 0) {
							problems.add(config + " decode rank " + dr + " token " + t + " head position " + pos
									+ ": expected model head " + head + " byte " + b + " from " + holders
									+ " rank(s), got value " + page[at] + " written " + writes[at] + " time(s)");
						}
					}
				}
			}
		}
	}

	@Test
	void everyDecodeHeadPositionReceivesTheModelHeadItMustHold() {
		assertThat(simulate(HeadSlicing::plan)).isEmpty();
	}

	@Test
	void theSimulationCatchesTheOlderGqaRuleForLargerDecodeTp() {
		// The snapshot's rule for P < D, (d × dst_heads) mod src_heads, ignores decode-side head replication.
		Planner old = (h, p, d, pr, dr, srcItemLen, dstItemLen, page) -> {
			HeadSlice right = HeadSlicing.plan(h, p, d, pr, dr, srcItemLen, dstItemLen, page);
			if (p >= d) {
				return right;
			}
			int srcHeads = Math.max(1, h / p);
			int dstHeads = Math.max(1, h / d);
			return new HeadSlice(dr * dstHeads % srcHeads, 0, dstHeads, right.headBytes());
		};
		List<String> problems = simulate(old);
		assertThat(problems).isNotEmpty()
				.anySatisfy(s -> assertThat(s).startsWith("H=2 P=1 D=4 decode rank 1"))
				.allSatisfy(s -> {
					// Only configurations with D > H replicate decode heads, so only those break.
					int h = Integer.parseInt(s.substring(2, s.indexOf(' ')));
					int d = Integer.parseInt(s.substring(s.indexOf("D=") + 2, s.indexOf(' ', s.indexOf("D="))));
					assertThat(d).isGreaterThan(h);
				});
	}

	@Test
	void groupLocalRanksGiveTheSameOffsetsAsFullRanks() {
		for (int h : SIZES) {
			for (int p : SIZES) {
				for (int d : SIZES) {
					int srcHeads = Math.max(1, h / p);
					int dstHeads = Math.max(1, h / d);
					int srcItemLen = PAGE * srcHeads * HEAD_BYTES;
					int dstItemLen = PAGE * dstHeads * HEAD_BYTES;
					for (int dr = 0; dr < d; dr++) {
						for (int pr = 0; pr < p; pr++) {
							boolean feeds = p >= d ? pr / (p / d) == dr : dr / (d / p) == pr;
							if (!feeds) {
								continue;
							}
							HeadSlice slice = HeadSlicing.plan(h, p, d, pr, dr, srcItemLen, dstItemLen, PAGE);
							if (p > d) {
								int local = pr % (p / d);
								assertThat(slice.dstHeadOffset())
										.isEqualTo(local / Math.max(1, p / h) * srcHeads % dstHeads);
							}
							else if (p < d) {
								int local = dr % (d / p);
								assertThat(slice.srcHeadOffset())
										.isEqualTo(local / Math.max(1, d / h) * dstHeads % srcHeads);
							}
						}
					}
				}
			}
		}
	}

	@Test
	void equalTpSendsTheWholeToken() {
		for (int h : SIZES) {
			for (int tp : SIZES) {
				int heads = Math.max(1, h / tp);
				int itemLen = PAGE * heads * 256;
				for (int r = 0; r < tp; r++) {
					HeadSlice slice = HeadSlicing.plan(h, tp, tp, r, r, itemLen, itemLen, PAGE);
					assertThat(slice).isEqualTo(new HeadSlice(0, 0, heads, 256));
					assertThat(slice.sliceBytes()).isEqualTo(itemLen / PAGE);
				}
			}
		}
	}

	@Test
	void llamaShapedExamples() {
		// 8 KV heads, head dim 128 in bf16 = 256 bytes per head, page size 16.
		int headBytes = 256;
		// Prefill TP 8 (1 head each) into decode TP 2 (4 heads each): prefill rank 5 is head 5 = position 1 of rank 1.
		HeadSlice intoFewer = HeadSlicing.plan(8, 8, 2, 5, 1, 16 * headBytes, 16 * 4 * headBytes, 16);
		assertThat(intoFewer).isEqualTo(new HeadSlice(0, 1, 1, headBytes));
		assertThat(intoFewer.dstByteOffset()).isEqualTo(256);
		assertThat(intoFewer.srcByteOffset()).isZero();
		// Prefill TP 2 (4 heads each) into decode TP 8: decode rank 6 holds head 6 = position 2 of prefill rank 1.
		HeadSlice intoMore = HeadSlicing.plan(8, 2, 8, 1, 6, 16 * 4 * headBytes, 16 * headBytes, 16);
		assertThat(intoMore).isEqualTo(new HeadSlice(2, 0, 1, headBytes));
		assertThat(intoMore.srcByteOffset()).isEqualTo(512);
		assertThat(intoMore.sliceBytes()).isEqualTo(256);
		// 2 KV heads, decode TP 8: ranks 4..7 replicate head 1, which is position 1 of prefill TP 1's token.
		for (int dr = 0; dr < 8; dr++) {
			assertThat(HeadSlicing.plan(2, 1, 8, 0, dr, 16 * 2 * headBytes, 16 * headBytes, 16).srcHeadOffset())
					.isEqualTo(dr / 4);
		}
	}

	@Test
	void rejectsTpSizesThatDoNotDivide() {
		assertThatThrownBy(() -> HeadSlicing.plan(12, 2, 3, 0, 0, 36, 24, 1))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill attn_tp_size=2 and decode attn_tp_size=3");
	}

	@Test
	void rejectsTpSizesThatDoNotSplitTheHeads() {
		assertThatThrownBy(() -> HeadSlicing.plan(6, 4, 2, 0, 0, 12, 36, 1))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill attn_tp_size=4 and total_kv_heads=6");
		assertThatThrownBy(() -> HeadSlicing.plan(3, 1, 2, 0, 0, 18, 6, 1))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("decode attn_tp_size=2 and total_kv_heads=3");
	}

	@Test
	void rejectsMoreRanksThanHeadsUnlessEachHeadIsReplicatedEvenly() {
		// 6 ranks over 4 heads: some head would sit on 1 rank, another on 2.
		assertThatThrownBy(() -> HeadSlicing.plan(4, 6, 6, 0, 0, 16, 16, 1))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill attn_tp_size=6 and total_kv_heads=4");
		assertThat(HeadSlicing.plan(4, 8, 8, 0, 0, 16, 16, 1).numHeads()).isEqualTo(1);
	}

	@Test
	void rejectsADecodeItemLengthThatIsNotWholeTokens() {
		assertThatThrownBy(() -> HeadSlicing.plan(8, 2, 2, 0, 0, 64, 100, 16))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("item lengths prefill=64 decode=100 (expected: multiples of page_size=16)");
	}

	@Test
	void rejectsRanksThatDoNotFeedEachOther() {
		assertThatThrownBy(() -> HeadSlicing.plan(8, 4, 2, 2, 0, 2 * 16, 4 * 16, 1))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill tp rank 2 (of 4) does not feed decode tp rank 0 (of 2)");
		assertThatThrownBy(() -> HeadSlicing.plan(8, 2, 4, 0, 2, 4 * 16, 2 * 16, 1))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill tp rank 0 (of 2) does not feed decode tp rank 2 (of 4)");
		assertThatThrownBy(() -> HeadSlicing.plan(8, 2, 2, 0, 1, 64, 64, 1)).isInstanceOf(TopologyException.class);
	}

	@Test
	void rejectsInconsistentItemLengths() {
		// Page size 16 does not divide 100.
		assertThatThrownBy(() -> HeadSlicing.plan(8, 2, 2, 0, 0, 100, 64, 16))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("prefill=100")
				.hasMessageContaining("page_size=16");
		// Decode token of 10 bytes cannot hold 4 heads.
		assertThatThrownBy(() -> HeadSlicing.plan(8, 4, 2, 0, 0, 16, 10, 1))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("4 KV heads");
		// Prefill in fp8 (1 byte per element) against decode in bf16: the prefill token is half the expected size.
		assertThatThrownBy(() -> HeadSlicing.plan(8, 4, 2, 0, 0, 16 * 2 * 128, 16 * 4 * 256, 16))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("item lengths are inconsistent")
				.hasMessageContaining("2 × 256");
		assertThatThrownBy(() -> HeadSlicing.plan(8, 2, 2, 1, 1, 64, 128, 1))
				.isInstanceOf(TopologyException.class)
				.hasMessageContaining("item lengths are inconsistent");
	}

	@Test
	void rejectsBadArguments() {
		assertThatIllegalArgumentException().isThrownBy(() -> HeadSlicing.plan(0, 1, 1, 0, 0, 8, 8, 1))
				.withMessage("totalKvHeads : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> HeadSlicing.plan(1, 0, 1, 0, 0, 8, 8, 1))
				.withMessage("prefillTp : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> HeadSlicing.plan(1, 1, 0, 0, 0, 8, 8, 1))
				.withMessage("decodeTp : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> HeadSlicing.plan(1, 1, 1, 0, 0, 0, 8, 1))
				.withMessage("srcItemLen : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> HeadSlicing.plan(1, 1, 1, 0, 0, 8, -8, 1))
				.withMessage("dstItemLen : -8 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> HeadSlicing.plan(1, 1, 1, 0, 0, 8, 8, 0))
				.withMessage("pageSize : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> HeadSlicing.plan(1, 2, 1, 2, 0, 8, 8, 1))
				.withMessage("prefillTpRank : 2 (expected: 0..1)");
		assertThatIllegalArgumentException().isThrownBy(() -> HeadSlicing.plan(1, 2, 4, 0, -1, 8, 8, 1))
				.withMessage("decodeTpRank : -1 (expected: 0..3)");
	}

	@Test
	void headSliceComputesByteSizesAndValidates() {
		HeadSlice slice = new HeadSlice(3, 1, 2, 256);
		assertThat(slice.sliceBytes()).isEqualTo(512);
		assertThat(slice.srcByteOffset()).isEqualTo(768);
		assertThat(slice.dstByteOffset()).isEqualTo(256);
		assertThatIllegalArgumentException().isThrownBy(() -> new HeadSlice(-1, 0, 1, 1))
				.withMessage("srcHeadOffset : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> new HeadSlice(0, -1, 1, 1))
				.withMessage("dstHeadOffset : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> new HeadSlice(0, 0, 0, 1))
				.withMessage("numHeads : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> new HeadSlice(0, 0, 1, 0))
				.withMessage("headBytes : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> new HeadSlice(1 << 20, 0, 1 << 20, 1024))
				.withMessageContaining("head slice");
	}
}
