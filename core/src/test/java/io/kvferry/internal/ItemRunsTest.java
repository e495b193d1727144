package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * The runs of one item written in parts against a plain model, a count per byte: after every write the run count is
 * the number of maximal stretches of equally written bytes, the sum counts every byte as often as it was written, and
 * the first bytes at a limit are the model's first byte at it up to the end of its stretch. The arrays grow only to the
 * capacity the owner asked for, and a write that would pass it is refused loudly, never wrapped.
 */
class ItemRunsTest {

	@Test
	void runsAgreeWithAByteCountModelOnRandomWrites() {
		Random random = new Random(20261206);
		for (int n = 0; n < 5_000; n++) {
			int length = 1 + random.nextInt(12);
			ItemRuns runs = new ItemRuns(length, length + 2);
			int[] model = new int[length];
			for (int w = 0; w < 6; w++) {
				int from = random.nextInt(length);
				int to = from + 1 + random.nextInt(length - from);
				int limit = 1 + random.nextInt(3);
				assertThat(runs.atLimit(from, to, limit)).as("limit %d in [%d, %d) of %s", limit, from, to, model)
						.isEqualTo(atLimit(model, from, to, limit));
				runs.add(from, to);
				for (int b = from; b < to; b++) {
					model[b]++;
				}
				assertThat(runs.runs()).as("runs of %s", model).isEqualTo(stretches(model));
				assertThat(runs.sum()).as("sum of %s", model).isEqualTo(sum(model));
				if (runs.runs() == 1) {
					assertThat(runs.uniformCount()).isEqualTo(model[0]);
				}
			}
		}
	}

	@Test
	void aFreshItemIsOneRunWrittenNoTimes() {
		ItemRuns runs = new ItemRuns(8, 4);
		assertThat(runs.runs()).isEqualTo(1);
		assertThat(runs.uniformCount()).isZero();
		assertThat(runs.sum()).isZero();
		assertThat(runs.atLimit(0, 8, 1)).isEqualTo(-1);
		assertThat(runs.atLimit(0, 8, 0)).as("every byte has been written 0 times").isEqualTo(8);
	}

	@Test
	void writingTheRestOfAnItemMergesItBackIntoOneRun() {
		ItemRuns runs = new ItemRuns(8, 4);
		runs.add(2, 5);
		assertThat(runs.runs()).isEqualTo(3);
		assertThat(runs.atLimit(0, 8, 1)).as("bytes [2, 5)").isEqualTo(2L << 32 | 5);
		assertThat(runs.atLimit(3, 4, 1)).as("clipped to the bytes asked").isEqualTo(3L << 32 | 4);
		runs.add(0, 2);
		assertThat(runs.runs()).isEqualTo(2);
		runs.add(5, 8);
		assertThat(runs.runs()).isEqualTo(1);
		assertThat(runs.uniformCount()).isEqualTo(1);
		assertThat(runs.sum()).isEqualTo(8);
	}

	@Test
	void theArraysGrowToTheCapacityAndAWritePastItIsRefused() {
		// maxRuns 3: room for 5 runs; the owner refuses a write that leaves more than 3, but a write adds 2 at most.
		ItemRuns runs = new ItemRuns(16, 3);
		assertThat(runs.arrayBytes()).as("two arrays of 4 ints").isEqualTo(2 * (16 + 4 * 4));
		runs.add(1, 2);
		runs.add(3, 4);
		assertThat(runs.runs()).isEqualTo(5);
		assertThat(runs.arrayBytes()).as("grown to the capacity, 5, not to 8").isEqualTo(2 * (16 + 4 * 5));
		assertThatThrownBy(() -> runs.add(5, 6)).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("capacity 5");
	}

	@Test
	void aSmallCapacityStartsAtItsSize() {
		ItemRuns runs = new ItemRuns(16, 0);
		assertThat(runs.arrayBytes()).isEqualTo(2 * (16 + 4 * 2));
		runs.add(4, 16);
		assertThat(runs.runs()).isEqualTo(2);
		assertThatThrownBy(() -> runs.add(10, 12)).isInstanceOf(IllegalStateException.class);
	}

	private static long atLimit(int[] model, int from, int to, int limit) {
		for (int b = from; b < to; b++) {
			if (model[b] >= limit) {
				int end = b;
				while (end < to && model[end] == model[b]) {
					end++;
				}
				return (long) b << 32 | end;
			}
		}
		return -1;
	}

	private static int stretches(int[] model) {
		int n = 1;
		for (int b = 1; b < model.length; b++) {
			if (model[b] != model[b - 1]) {
				n++;
			}
		}
		return n;
	}

	private static long sum(int[] model) {
		long s = 0;
		for (int c : model) {
			s += c;
		}
		return s;
	}
}
