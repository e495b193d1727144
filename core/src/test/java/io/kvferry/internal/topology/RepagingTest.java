package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import io.kvferry.TopologyException;
import org.junit.jupiter.api.Test;

/** Prefill pages of P tokens onto decode pages of D tokens: token by token, in pieces, chunk by chunk. */
class RepagingTest {

	@Test
	void smallPrefillPagesFillALargeDecodePageAndMergeWhileBothSidesAdvance() {
		// Prefill pages 4, 5, 6 are adjacent, 9 is not; decode pages 2 and 3 are adjacent.
		List<SlotRun> runs = Repaging.runs(new int[] { 4, 5, 6, 9 }, 0, 2, new int[] { 2, 3 }, 4, true);
		assertThat(runs).containsExactly(new SlotRun(8, 8, 6), new SlotRun(18, 14, 2));
	}

	@Test
	void largePrefillPagesSpreadOverSmallDecodePagesAndTheirTailIsNotSent() {
		// 2 prefill pages of 4 tokens hold 8 slots; decode's 3 pages of 2 tokens hold 6: the last 2 stay behind.
		List<SlotRun> runs = Repaging.runs(new int[] { 1, 7 }, 0, 4, new int[] { 5, 6, 0 }, 2, true);
		assertThat(runs).containsExactly(new SlotRun(4, 10, 4), new SlotRun(28, 0, 2));
	}

	@Test
	void decodesLastPageIsFilledUpWithCopiesOfPrefillsLastPage() {
		// 3 prefill pages of 1 token into one decode page of 8: slots 3..7 repeat prefill page 9.
		List<SlotRun> runs = Repaging.runs(new int[] { 7, 8, 9 }, 0, 1, new int[] { 2 }, 8, true);
		assertThat(runs).containsExactly(new SlotRun(7, 16, 3), new SlotRun(9, 19, 1), new SlotRun(9, 20, 1),
				new SlotRun(9, 21, 1), new SlotRun(9, 22, 1), new SlotRun(9, 23, 1));
		// Not the room's last chunk: nothing past its own pages.
		assertThat(Repaging.runs(new int[] { 7, 8, 9 }, 0, 1, new int[] { 2 }, 8, false))
				.containsExactly(new SlotRun(7, 16, 3));
	}

	@Test
	void equalPageSizesGiveThePageRunsTimesThePageSize() {
		int[] src = { 4, 5, 6, 9 };
		int[] dst = { 0, 1, 2, 3 };
		List<SlotRun> expected = new ArrayList<>();
		for (PageRun r : PageRuns.group(src, dst)) {
			expected.add(new SlotRun(r.srcStart() * 16L, r.dstStart() * 16L, r.length() * 16));
		}
		assertThat(Repaging.runs(src, 0, 16, dst, 16, true)).isEqualTo(expected);
	}

	@Test
	void everyDecodeSlotIsWrittenOnceFromTheTokenItHolds() {
		int[] sizes = { 1, 2, 4, 16, 64 };
		Random random = new Random(27);
		for (int p : sizes) {
			for (int d : sizes) {
				for (int round = 0; round < 40; round++) {
					checkRoom(p, d, 1 + random.nextInt(300), random);
				}
			}
		}
	}

	/** Cuts a room of {@code tokens} into chunks and checks what every decode slot receives, over all chunks. */
	private static void checkRoom(int p, int d, int tokens, Random random) {
		int np = (tokens + p - 1) / p;
		int nd = (tokens + d - 1) / d;
		assertThat(Repaging.matches(np, p, nd, d)).isTrue();
		int[] src = scatter(np, random);
		int[] dst = scatter(nd, random);
		// For each decode slot (by position in the room), the prefill slot it was written from, or -1.
		long[] from = new long[nd * d];
		Arrays.fill(from, -1);
		int first = 0;
		while (first < np) {
			int len = 1 + random.nextInt(np - first);
			int[] chunk = Arrays.copyOfRange(src, first, first + len);
			for (SlotRun r : Repaging.runs(chunk, first, p, dst, d, first + len == np)) {
				for (int i = 0; i < r.tokens(); i++) {
					long dstSlot = r.dstSlot() + i;
					int position = indexOf(dst, (int) (dstSlot / d)) * d + (int) (dstSlot % d);
					assertThat(from[position]).as("decode slot %d of P=%d D=%d written twice", position, p, d)
							.isEqualTo(-1);
					from[position] = r.srcSlot() + i;
				}
			}
			first += len;
		}
		long held = (long) np * p;
		for (int t = 0; t < nd * d; t++) {
			// Past prefill's last page, decode's last page repeats it.
			long token = t < held ? t : held - p + (t - held) % p;
			long expected = (long) src[(int) (token / p)] * p + token % p;
			assertThat(from[t]).as("decode slot %d of %d tokens, P=%d D=%d", t, tokens, p, d).isEqualTo(expected);
		}
	}

	private static int[] scatter(int n, Random random) {
		List<Integer> pages = new ArrayList<>();
		for (int i = 0; i < 3 * n; i++) {
			pages.add(i);
		}
		java.util.Collections.shuffle(pages, random);
		int[] out = pages.subList(0, n).stream().mapToInt(Integer::intValue).sorted().toArray();
		// Half the rooms keep their pages in order (adjacent runs), half scatter them.
		if (random.nextBoolean()) {
			for (int i = out.length - 1; i > 0; i--) {
				int j = random.nextInt(i + 1);
				int x = out[i];
				out[i] = out[j];
				out[j] = x;
			}
		}
		return out;
	}

	private static int indexOf(int[] pages, int page) {
		for (int i = 0; i < pages.length; i++) {
			if (pages[i] == page) {
				return i;
			}
		}
		throw new AssertionError("page " + page + " is none of the room's");
	}

	@Test
	void pageCountsMustDescribeOneTokenCount() {
		// 20 tokens: 20 pages of 1, 2 pages of 16.
		assertThat(Repaging.matches(20, 1, 2, 16)).isTrue();
		assertThat(Repaging.matches(16, 1, 2, 16)).isFalse();
		assertThat(Repaging.matches(33, 1, 2, 16)).isFalse();
		assertThat(Repaging.matches(2, 16, 20, 1)).isTrue();
		assertThat(Repaging.matches(2, 16, 33, 1)).isFalse();
		assertThat(Repaging.matches(0, 16, 0, 1)).isTrue();
		assertThat(Repaging.fits(2, 16, 17, 1)).isTrue();
		assertThat(Repaging.fits(3, 16, 32, 1)).isFalse();
		assertThat(Repaging.fits(0, 16, 0, 1)).isTrue();
	}

	@Test
	void pageSizesMustBeEqualOrPowersOfTwo() {
		Repaging.checkPageSizes(1, 64);
		Repaging.checkPageSizes(12, 12);
		assertThatThrownBy(() -> Repaging.checkPageSizes(16, 12)).isInstanceOf(TopologyException.class)
				.hasMessage("page sizes differ and are not both powers of two: prefill page_size=16, decode "
						+ "page_size=12 (expected: equal, or powers of two so that one page size divides the other)");
		assertThatThrownBy(() -> Repaging.checkPageSizes(3, 1)).isInstanceOf(TopologyException.class);
	}
}
