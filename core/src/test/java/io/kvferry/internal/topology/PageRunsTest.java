package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

class PageRunsTest {

	@Test
	void emptyListsGiveNoRuns() {
		assertThat(PageRuns.group(new int[0], new int[0])).isEmpty();
	}

	@Test
	void singlePageIsOneRun() {
		assertThat(PageRuns.group(new int[] { 7 }, new int[] { 3 })).containsExactly(new PageRun(7, 3, 1));
	}

	@Test
	void contiguousPagesAreOneRun() {
		int[] src = IntStream.range(100, 164).toArray();
		int[] dst = IntStream.range(0, 64).toArray();
		assertThat(PageRuns.group(src, dst)).containsExactly(new PageRun(100, 0, 64));
	}

	@Test
	void scatteredPagesAreOneRunEach() {
		assertThat(PageRuns.group(new int[] { 9, 2, 40 }, new int[] { 1, 5, 3 })).containsExactly(
				new PageRun(9, 1, 1), new PageRun(2, 5, 1), new PageRun(40, 3, 1));
	}

	@Test
	void mixedListsSplitWhereEitherSideJumps() {
		int[] src = { 4, 5, 6, 9, 10, 11, 12, 20 };
		int[] dst = { 0, 1, 2, 3, 4, 8, 9, 10 };
		assertThat(PageRuns.group(src, dst)).containsExactly(new PageRun(4, 0, 3), new PageRun(9, 3, 2),
				new PageRun(11, 8, 2), new PageRun(20, 10, 1));
	}

	@Test
	void runBreaksWhenOnlyTheSourceJumps() {
		assertThat(PageRuns.group(new int[] { 1, 2, 8, 9 }, new int[] { 5, 6, 7, 8 }))
				.containsExactly(new PageRun(1, 5, 2), new PageRun(8, 7, 2));
	}

	@Test
	void runBreaksWhenOnlyTheDestinationJumps() {
		assertThat(PageRuns.group(new int[] { 5, 6, 7, 8 }, new int[] { 1, 2, 8, 9 }))
				.containsExactly(new PageRun(5, 1, 2), new PageRun(7, 8, 2));
	}

	@Test
	void runBreaksOnDescendingOrRepeatedPages() {
		assertThat(PageRuns.group(new int[] { 3, 2, 1 }, new int[] { 0, 1, 2 })).hasSize(3);
		assertThat(PageRuns.group(new int[] { 0, 1, 2 }, new int[] { 3, 2, 1 })).hasSize(3);
		assertThat(PageRuns.group(new int[] { 4, 4 }, new int[] { 0, 1 }))
				.containsExactly(new PageRun(4, 0, 1), new PageRun(4, 1, 1));
	}

	@Test
	void doesNotWrapPastIntegerMaxValue() {
		assertThatIllegalArgumentException()
				.isThrownBy(() -> PageRuns.group(new int[] { Integer.MAX_VALUE, Integer.MIN_VALUE },
						new int[] { Integer.MAX_VALUE, Integer.MIN_VALUE }))
				.withMessage("srcPages[1] : " + Integer.MIN_VALUE + " (expected: >= 0)");
		assertThat(PageRuns.group(new int[] { Integer.MAX_VALUE - 1, Integer.MAX_VALUE }, new int[] { 0, 1 }))
				.containsExactly(new PageRun(Integer.MAX_VALUE - 1, 0, 2));
	}

	@Test
	void rejectsListsOfDifferentLengthsNamingBoth() {
		assertThatIllegalArgumentException().isThrownBy(() -> PageRuns.group(new int[3], new int[2]))
				.withMessageContaining("3 source pages")
				.withMessageContaining("2 destination pages");
		assertThatIllegalArgumentException().isThrownBy(() -> PageRuns.group(new int[0], new int[1]))
				.withMessageContaining("0 source pages");
	}

	@Test
	void rejectsNegativePageIndices() {
		assertThatIllegalArgumentException().isThrownBy(() -> PageRuns.group(new int[] { 0, -1 }, new int[] { 0, 1 }))
				.withMessage("srcPages[1] : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> PageRuns.group(new int[] { 0, 1 }, new int[] { -3, 1 }))
				.withMessage("dstPages[0] : -3 (expected: >= 0)");
		// A negative index that would continue neither run is caught too.
		assertThatIllegalArgumentException()
				.isThrownBy(() -> PageRuns.group(new int[] { 5, 6, -9 }, new int[] { 1, 2, 3 }))
				.withMessage("srcPages[2] : -9 (expected: >= 0)");
	}

	@Test
	void rejectsNullLists() {
		assertThatNullPointerException().isThrownBy(() -> PageRuns.group(null, new int[0])).withMessage("srcPages");
		assertThatNullPointerException().isThrownBy(() -> PageRuns.group(new int[0], null)).withMessage("dstPages");
	}

	@Test
	void leavesTheInputUntouched() {
		int[] src = { 3, 4, 9 };
		int[] dst = { 0, 1, 2 };
		PageRuns.group(src, dst);
		assertThat(src).containsExactly(3, 4, 9);
		assertThat(dst).containsExactly(0, 1, 2);
	}

	@Test
	void randomListsExpandBackToTheInputWithMaximalRuns() {
		Random random = new Random(20240611L);
		for (int round = 0; round < 2000; round++) {
			int n = random.nextInt(40);
			int[] src = new int[n];
			int[] dst = new int[n];
			for (int i = 0; i < n; i++) {
				// Mostly contiguous with occasional jumps on either side, like a page allocator's output.
				src[i] = i > 0 && random.nextInt(4) != 0 ? src[i - 1] + 1 : random.nextInt(1000);
				dst[i] = i > 0 && random.nextInt(4) != 0 ? dst[i - 1] + 1 : random.nextInt(1000);
			}
			List<PageRun> runs = PageRuns.group(src, dst);
			List<Integer> srcBack = new ArrayList<>();
			List<Integer> dstBack = new ArrayList<>();
			for (PageRun run : runs) {
				for (int k = 0; k < run.length(); k++) {
					srcBack.add(run.srcStart() + k);
					dstBack.add(run.dstStart() + k);
				}
			}
			assertThat(srcBack).containsExactly(IntStream.of(src).boxed().toArray(Integer[]::new));
			assertThat(dstBack).containsExactly(IntStream.of(dst).boxed().toArray(Integer[]::new));
			for (int r = 1; r < runs.size(); r++) {
				PageRun a = runs.get(r - 1);
				PageRun b = runs.get(r);
				boolean mergeable = b.srcStart() == a.srcStart() + a.length()
						&& b.dstStart() == a.dstStart() + a.length();
				assertThat(mergeable).as("runs %s and %s could be one", a, b).isFalse();
			}
		}
	}

	@Test
	void runOffsetsAreComputedIn64Bits() {
		PageRun run = new PageRun(3_000_000, 70_000, 100_000);
		int itemLen = 32 * 1024;
		assertThat(run.srcOffset(itemLen)).isEqualTo(3_000_000L * 32 * 1024).isGreaterThan(Integer.MAX_VALUE);
		assertThat(run.dstOffset(itemLen)).isEqualTo(70_000L * 32 * 1024).isGreaterThan(Integer.MAX_VALUE);
		assertThat(run.byteLength(itemLen)).isEqualTo(100_000L * 32 * 1024).isGreaterThan(Integer.MAX_VALUE);
		assertThat(new PageRun(Integer.MAX_VALUE, 0, 1).srcOffset(Integer.MAX_VALUE))
				.isEqualTo((long) Integer.MAX_VALUE * Integer.MAX_VALUE);
	}

	@Test
	void pageRunValidatesItsValues() {
		assertThatIllegalArgumentException().isThrownBy(() -> new PageRun(-1, 0, 1))
				.withMessage("srcStart : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> new PageRun(0, -1, 1))
				.withMessage("dstStart : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> new PageRun(0, 0, 0))
				.withMessage("length : 0 (expected: >= 1)");
		PageRun run = new PageRun(0, 0, 1);
		assertThatIllegalArgumentException().isThrownBy(() -> run.srcOffset(0))
				.withMessage("itemLen : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> run.dstOffset(-5))
				.withMessage("itemLen : -5 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> run.byteLength(0))
				.withMessage("itemLen : 0 (expected: >= 1)");
	}
}
