package io.kvferry.cli;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WorkloadTest {

	@Test
	void lengthsDependOnlyOnTheSeedAndSpanTheRange() {
		Workload a = Workload.generate(64, 128, 12288, 16, 42, 1);
		Workload b = Workload.generate(64, 128, 12288, 16, 42, 2);
		assertThat(a.requests()).extracting(Workload.Request::tokens)
				.isEqualTo(b.requests().stream().map(Workload.Request::tokens).toList());
		assertThat(a.requests()).extracting(Workload.Request::room)
				.isNotEqualTo(b.requests().stream().map(Workload.Request::room).toList());
		assertThat(a.maxTokens()).isEqualTo(12288);
		assertThat(a.minTokens()).isLessThan(1000);
		assertThat(a.requests()).allSatisfy(r -> {
			assertThat(r.tokens()).isBetween(128, 12288);
			assertThat(r.pages()).isEqualTo((r.tokens() + 15) / 16);
			assertThat(r.room()).isNotNegative();
		});
	}

	@Test
	void mostPromptsAreShortAndRoomsAreDistinct() {
		Workload w = Workload.generate(1000, 128, 32768, 16, 3, 3);
		List<Integer> sorted = w.requests().stream().map(Workload.Request::tokens).sorted().toList();
		assertThat(sorted.get(500)).isLessThan(1000);
		Set<Long> rooms = new HashSet<>();
		w.requests().forEach(r -> rooms.add(r.room()));
		assertThat(rooms).hasSize(1000);
		assertThat(w.totalTokens()).isEqualTo(w.requests().stream().mapToLong(Workload.Request::tokens).sum());
		assertThat(w.totalPages()).isEqualTo(w.requests().stream().mapToLong(Workload.Request::pages).sum());
	}

	@Test
	void poolHoldsTheLargestRequestsInFlightWithinTheBudgetButNeverLessThanTheLargest() {
		Workload w = Workload.generate(4, 16, 16, 16, 1, 1);
		assertThat(w.largestPages()).isEqualTo(1);
		assertThat(w.poolPages(2, 100)).isEqualTo(2);
		assertThat(w.poolPages(8, 100)).isEqualTo(4);
		Workload big = Workload.generate(3, 1600, 1600, 16, 1, 1);
		assertThat(big.poolPages(3, 10)).isEqualTo(100);
		assertThat(big.poolPages(3, 250)).isEqualTo(250);
	}

	@Test
	@Timeout(10)
	void aBatchHoldsNothingPerRequestItsRequestsAreMadeWhenAskedFor() {
		// As many requests as a list can have: made at once, any of them at once, the same each time.
		Workload huge = Workload.generate(Integer.MAX_VALUE, 128, 12288, 16, 42, 7);
		Workload.Request last = huge.requests().get(Integer.MAX_VALUE - 1);
		assertThat(huge.requests()).hasSize(Integer.MAX_VALUE);
		assertThat(huge.requests().get(Integer.MAX_VALUE - 1)).isEqualTo(last);
		assertThat(last.tokens()).isBetween(128, 12288);
		assertThat(huge.requests().get(Integer.MAX_VALUE / 2).tokens()).as("the one that spans the range")
				.isEqualTo(12288);
		assertThat(huge.largestPages()).isEqualTo(768);
	}

	@Test
	void roomIdsOfABatchAreDistinctAndNonNegativeWithoutRememberingThem() {
		// The map is one to one on 63 bits, also where seed + index wraps past the largest long.
		for (long seed : new long[] { 0, 42, Long.MAX_VALUE - 50_000, -1 }) {
			Set<Long> seen = new HashSet<>();
			for (int i = 0; i < 100_000; i++) {
				long id = Workload.roomId(seed, i);
				assertThat(id).isNotNegative();
				seen.add(id);
			}
			assertThat(seen).as("seed %d", seed).hasSize(100_000);
		}
	}

	@Test
	void rejectsAnEmptyBatchOrAnInvertedRange() {
		assertThatThrownBy(() -> Workload.generate(0, 1, 2, 16, 1, 1)).hasMessage("requests : 0 (expected: >= 1)");
		assertThatThrownBy(() -> Workload.generate(1, 5, 2, 16, 1, 1))
				.hasMessage("tokens : 5..2 (expected: 1 <= min-tokens <= max-tokens)");
	}
}
