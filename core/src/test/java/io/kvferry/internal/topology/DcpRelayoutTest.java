package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import io.kvferry.TopologyException;
import org.junit.jupiter.api.Test;

/** A prefill at DCP 1 relaying each room's tokens to the decode DCP ranks that hold them, and SGLang's refusals. */
class DcpRelayoutTest {

	@Test
	void equalSizesPairEqualRanksAndOnlyMlaRelaysFromOneToMany() {
		assertThat(DcpRelayout.requiresRelayout(1, 0, 1, 0, false)).isFalse();
		assertThat(DcpRelayout.requiresRelayout(2, 1, 2, 1, false)).isFalse();
		assertThat(DcpRelayout.requiresRelayout(1, 0, 2, 1, true)).isTrue();
		assertThat(DcpRelayout.requiresRelayout(1, 0, 4, 3, true)).isTrue();
	}

	@Test
	void sglangsRefusalsAreNamed() {
		assertThatThrownBy(() -> DcpRelayout.requiresRelayout(2, 0, 2, 1, true))
				.isInstanceOf(TopologyException.class)
				.hasMessage("PD peers must connect matching DCP ranks, got prefill=0, decode=1");
		assertThatThrownBy(() -> DcpRelayout.requiresRelayout(1, 0, 2, 0, false))
				.isInstanceOf(TopologyException.class)
				.hasMessage("Unsupported PD DCP topology: 1 -> 2 (decode DCP requires an MLA or hybrid-MLA KV pool)");
		assertThatThrownBy(() -> DcpRelayout.requiresRelayout(2, 0, 4, 0, true))
				.isInstanceOf(TopologyException.class)
				.hasMessage("Unsupported PD DCP topology: 2 -> 4 (expected: equal DCP sizes, or prefill DCP 1 to "
						+ "decode DCP above 1 with MLA)");
		assertThatThrownBy(() -> DcpRelayout.requiresRelayout(4, 0, 1, 0, true))
				.hasMessageStartingWith("Unsupported PD DCP topology: 4 -> 1");
		assertThatThrownBy(() -> DcpRelayout.checkTokenGeometry(3, 1152 * 16, 16, 576 * 16, 16))
				.isInstanceOf(TopologyException.class)
				.hasMessage("PD DCP source/destination KV geometry differs at kv[3]: src=1152 bytes per token, "
						+ "dst=576 bytes per token");
	}

	@Test
	void aPrefixMustFillWholeVirtualPages() {
		assertThat(DcpRelayout.alignedPrefix(0, 16, 4)).isTrue();
		assertThat(DcpRelayout.alignedPrefix(64, 16, 4)).isTrue();
		assertThat(DcpRelayout.alignedPrefix(16, 16, 4)).isFalse();
		assertThat(DcpRelayout.alignedPrefix(32, 16, 4)).isFalse();
		assertThat(DcpRelayout.alignedPrefix(3, 1, 2)).isFalse();
	}

	@Test
	void eachTokenGoesToItsRankAtItsLocalSlot() {
		// Pages of 2 tokens, DCP 2, rank 1: room tokens 1 and 3 land at the rank's local slots 0 and 1.
		assertThat(DcpRelayout.runs(new int[] { 5, 3 }, 0, 2, new int[] { 7 }, 2, 1, true))
				.containsExactly(new SlotRun(11, 14, 1), new SlotRun(7, 15, 1));
		// A later chunk (first page 1 after the prefix): rank 0 takes token 2 of the room, its local slot 1.
		assertThat(DcpRelayout.runs(new int[] { 3 }, 1, 2, new int[] { 7 }, 2, 0, false))
				.containsExactly(new SlotRun(6, 15, 1));
	}

	@Test
	void aRanksUnfilledLastPageIsFilledFromTheRoomsLastPage() {
		// One page of 4 tokens over DCP 4: rank 3 holds token 3 only; its page's other 3 slots get slots 0..2 of the
		// room's last page, one contiguous run.
		assertThat(DcpRelayout.runs(new int[] { 2 }, 0, 4, new int[] { 6 }, 4, 3, true))
				.containsExactly(new SlotRun(11, 24, 1), new SlotRun(8, 25, 3));
	}

	@Test
	void everyGrantedSlotIsWrittenOnceAndEveryTokenLandsWhereSglangPutsIt() {
		Random random = new Random(27);
		for (int round = 0; round < 400; round++) {
			int p = new int[] { 1, 2, 4, 16 }[random.nextInt(4)];
			int dcp = new int[] { 2, 4, 8 }[random.nextInt(3)];
			int tokens = 1 + random.nextInt(200);
			int numPages = (tokens + p - 1) / p;
			int[] src = distinctPages(numPages, random);
			for (int rank = 0; rank < dcp; rank++) {
				long share = DcpRelayout.share(tokens, dcp, rank);
				int[] dst = distinctPages((int) ((share + p - 1) / p), random);
				assertThat(DcpRelayout.matches(numPages, dst.length, p, dcp, rank)).as("matches").isTrue();
				Map<Long, Long> written = new HashMap<>();
				int first = 0;
				while (first < numPages) {
					int n = 1 + random.nextInt(numPages - first);
					int[] chunk = Arrays.copyOfRange(src, first, first + n);
					assertThat(DcpRelayout.fits(first + n, dst.length, p, dcp, rank)).as("fits").isTrue();
					List<SlotRun> runs = DcpRelayout.runs(chunk, first, p, dst, dcp, rank, first + n == numPages);
					for (SlotRun r : runs) {
						for (int t = 0; t < r.tokens(); t++) {
							assertThat(written.put(r.dstSlot() + t, r.srcSlot() + t)).as("slot written twice").isNull();
						}
					}
					first += n;
				}
				assertThat(written).hasSize(dst.length * p);
				for (long local = 0; local < share; local++) {
					// SGLang: token g of rank g mod dcp sits at local offset g / dcp.
					long g = local * dcp + rank;
					long dstSlot = (long) dst[(int) (local / p)] * p + local % p;
					assertThat(written.get(dstSlot)).isEqualTo((long) src[(int) (g / p)] * p + g % p);
				}
			}
		}
	}

	private static int[] distinctPages(int n, Random random) {
		List<Integer> all = new ArrayList<>();
		for (int i = 0; i < 4 * n + 4; i++) {
			all.add(i);
		}
		Collections.shuffle(all, random);
		return all.subList(0, n).stream().mapToInt(Integer::intValue).toArray();
	}
}
