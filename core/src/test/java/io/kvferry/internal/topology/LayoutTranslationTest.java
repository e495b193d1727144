package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.kvferry.KVLayout;
import io.kvferry.TopologyException;
import io.kvferry.internal.topology.LayoutTranslation.Side;
import org.junit.jupiter.api.Test;

/**
 * Moves planned between KV pages of different byte orders, applied to byte arrays and compared byte for byte with a
 * reference re-layout computed here from the two layouts' definitions.
 */
class LayoutTranslationTest {

	private static final KVLayout[] LAYOUTS = KVLayout.values();

	/** Where the reference puts byte {@code b} of head {@code h} of the token at {@code slot}. */
	private static long reference(KVLayout layout, int pageSize, int heads, int headBytes, long slot, int h, int b) {
		long page = slot / pageSize;
		long t = slot % pageSize;
		long itemLen = (long) pageSize * heads * headBytes;
		long inPage = layout == KVLayout.NHD ? (t * heads + h) * headBytes : ((long) h * pageSize + t) * headBytes;
		return page * itemLen + inPage + b;
	}

	/** A byte that names its token, head and position in the head. */
	private static byte value(long token, int head, int b) {
		return (byte) (token * 31 + head * 7 + b * 3 + 1);
	}

	@Test
	void everyHeadOfEveryTokenLandsWhereTheDestinationLayoutWantsItOnce() {
		Random random = new Random(11);
		int[] pageSizes = { 1, 2, 4, 16 };
		int cells = 0;
		for (int i = 0; i < 3000; i++) {
			KVLayout sl = LAYOUTS[random.nextInt(2)];
			KVLayout dl = LAYOUTS[random.nextInt(2)];
			int sp = pageSizes[random.nextInt(pageSizes.length)];
			int dp = pageSizes[random.nextInt(pageSizes.length)];
			int sh = 1 << random.nextInt(4);
			int dh = 1 << random.nextInt(4);
			int headBytes = 1 + random.nextInt(5);
			int heads = 1 + random.nextInt(Math.min(sh, dh));
			int srcHead = random.nextInt(sh - heads + 1);
			int dstHead = random.nextInt(dh - heads + 1);
			long tokens = 1 + random.nextInt(40);
			long srcSlot = random.nextInt(3 * sp + 5);
			long dstSlot = random.nextInt(3 * dp + 5);
			long maxBytes = random.nextBoolean() ? Long.MAX_VALUE : 1 + random.nextInt(3 * headBytes);
			check(new Side(sl, sp, sh, headBytes), new Side(dl, dp, dh, headBytes), srcHead, dstHead, heads, srcSlot,
					dstSlot, tokens, maxBytes);
			cells++;
		}
		assertThat(cells).isEqualTo(3000);
	}

	private static void check(Side s, Side d, int srcHead, int dstHead, int heads, long srcSlot, long dstSlot,
			long tokens, long maxBytes) {
		int hb = s.headBytes();
		byte[] src = new byte[(int) ((srcSlot + tokens + s.pageSize()) / s.pageSize() * s.itemLen())];
		byte[] dst = new byte[(int) ((dstSlot + tokens + d.pageSize()) / d.pageSize() * d.itemLen())];
		for (long t = 0; t < src.length / ((long) s.heads() * hb); t++) {
			for (int h = 0; h < s.heads(); h++) {
				for (int b = 0; b < hb; b++) {
					src[(int) reference(s.layout(), s.pageSize(), s.heads(), hb, t, h, b)] = value(t, h, b);
				}
			}
		}
		int[] written = new int[dst.length];
		List<String> moves = new ArrayList<>();
		LayoutTranslation.plan(s, d, srcHead, dstHead, heads, srcSlot, dstSlot, tokens, maxBytes,
				(from, fromStride, to, toStride, chunkLen, count) -> {
					moves.add(from + "/" + fromStride + "->" + to + "/" + toStride + " " + chunkLen + "x" + count);
					assertThat((long) chunkLen * count).isLessThanOrEqualTo(Math.max(hb, maxBytes));
					for (int c = 0; c < count; c++) {
						for (int b = 0; b < chunkLen; b++) {
							int at = (int) (to + c * toStride + b);
							dst[at] = src[(int) (from + c * fromStride + b)];
							written[at]++;
						}
					}
				});
		String cell = s + " -> " + d + " heads " + srcHead + "+" + heads + "->" + dstHead + ", slots " + srcSlot
				+ "->" + dstSlot + " x" + tokens + ", max " + maxBytes + ": " + moves;
		long total = 0;
		for (long k = 0; k < tokens; k++) {
			for (int h = 0; h < heads; h++) {
				for (int b = 0; b < hb; b++) {
					int at = (int) reference(d.layout(), d.pageSize(), d.heads(), hb, dstSlot + k, dstHead + h, b);
					assertThat(dst[at]).as(cell).isEqualTo(value(srcSlot + k, srcHead + h, b));
					assertThat(written[at]).as(cell).isEqualTo(1);
					total++;
				}
			}
		}
		long all = 0;
		for (int w : written) {
			all += w;
		}
		// Nothing outside the planned heads and tokens was written.
		assertThat(all).as(cell).isEqualTo(total);
	}

	@Test
	void headMajorPagesMoveOneChunkPerHeadAndPageAndMixedOnesOneDestinationRunEach() {
		List<String> moves = new ArrayList<>();
		LayoutTranslation.Move record = (from, fs, to, ts, len, count) -> moves
				.add(from + "/" + fs + "->" + to + "/" + ts + " " + len + "x" + count);
		// HND pages of 4 tokens × 2 heads × 8 bytes to NHD: each token's 2 heads read a head page (32 bytes) apart,
		// written adjacent: one run of the destination per token.
		LayoutTranslation.plan(new Side(KVLayout.HND, 4, 2, 8), new Side(KVLayout.NHD, 4, 2, 8), 0, 0, 2, 0, 4, 4,
				Long.MAX_VALUE, record);
		assertThat(moves).containsExactly("0/32->64/8 8x2", "8/32->80/8 8x2", "16/32->96/8 8x2", "24/32->112/8 8x2");
		moves.clear();
		// NHD to HND: each head's 4 tokens read a token (16 bytes) apart, written adjacent: one run per head and page.
		LayoutTranslation.plan(new Side(KVLayout.NHD, 4, 2, 8), new Side(KVLayout.HND, 4, 2, 8), 0, 0, 2, 0, 4, 4,
				Long.MAX_VALUE, record);
		assertThat(moves).containsExactly("0/16->64/8 8x4", "8/16->96/8 8x4");
		moves.clear();
		// HND to HND re-paged from 4 to 2 tokens: each head of each destination page is one contiguous chunk.
		LayoutTranslation.plan(new Side(KVLayout.HND, 4, 2, 8), new Side(KVLayout.HND, 2, 2, 8), 0, 0, 2, 0, 0, 4,
				Long.MAX_VALUE, record);
		assertThat(moves).containsExactly("0/0->0/0 16x1", "16/0->32/0 16x1", "32/0->16/0 16x1", "48/0->48/0 16x1");
	}

	@Test
	void onlyPagesWhoseOrderDiffersInEffectNeedIt() {
		assertThat(LayoutTranslation.needed(new Side(KVLayout.NHD, 16, 8, 2), new Side(KVLayout.HND, 16, 8, 2)))
				.isTrue();
		assertThat(LayoutTranslation.needed(new Side(KVLayout.HND, 16, 8, 2), new Side(KVLayout.HND, 4, 8, 2)))
				.isTrue();
		assertThat(LayoutTranslation.needed(new Side(KVLayout.HND, 16, 8, 2), new Side(KVLayout.HND, 16, 4, 2)))
				.isTrue();
		// Same head-major pages: whole pages keep their order.
		assertThat(LayoutTranslation.needed(new Side(KVLayout.HND, 16, 8, 2), new Side(KVLayout.HND, 16, 8, 2)))
				.isFalse();
		// One head per token (MLA's latent) or one token per page: both orders are the same bytes.
		assertThat(LayoutTranslation.needed(new Side(KVLayout.HND, 16, 1, 2), new Side(KVLayout.NHD, 16, 1, 2)))
				.isFalse();
		assertThat(LayoutTranslation.needed(new Side(KVLayout.HND, 1, 8, 2), new Side(KVLayout.NHD, 16, 8, 2)))
				.isFalse();
	}

	@Test
	void aPageThatDoesNotHoldWholeHeadsIsRefusedByName() {
		assertThatThrownBy(() -> Side.of("decode kv[3]", KVLayout.HND, 100, 4, 8))
				.isInstanceOf(TopologyException.class)
				.hasMessage("KV layout HND on decode kv[3]: a page of 100 bytes does not hold 4 tokens of 8 whole heads "
						+ "(expected: item length a multiple of page size × heads, so that each head of each token can "
						+ "be re-laid)");
		assertThat(Side.of("prefill kv[0]", KVLayout.NHD, 256, 4, 8).headBytes()).isEqualTo(8);
		assertThatThrownBy(() -> LayoutTranslation.plan(new Side(KVLayout.HND, 4, 2, 8),
				new Side(KVLayout.NHD, 4, 2, 4), 0, 0, 1, 0, 0, 1, 64, (a, b, c, d, e, f) -> {
				})).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expected: equal head sizes");
	}
}
