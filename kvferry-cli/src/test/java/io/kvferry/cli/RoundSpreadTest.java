package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvferry.harness.ModelShape;
import org.junit.jupiter.api.Test;

class RoundSpreadTest {

	@Test
	void eachRoundIsComparedWithTheBaselineOfTheSameRound() {
		// The machine halves its speed for the last two rounds: both sides slow down together, so every round's ratio
		// is 0.8, while the ratio of the two medians taken apart would read 1.6 / 1.8 = 0.89.
		double[] kvferry = { 1.6, 1.6, 1.6, 0.8, 0.8 };
		double[] pump = { 2.0, 2.0, 2.0, 1.0, 1.0 };
		ObjectNode s = RoundSpread.ofRates(kvferry, pump);
		assertThat(s.get("rounds").asInt()).isEqualTo(5);
		assertThat(s.get("ratio_median").asDouble()).isEqualTo(0.8);
		assertThat(s.get("ratio_min").asDouble()).isEqualTo(0.8);
		assertThat(s.get("ratio_max").asDouble()).isEqualTo(0.8);
		// The baseline itself moved by half its median: the run is flagged, whatever its ratio says.
		assertThat(s.get("baseline_spread").asDouble()).isEqualTo(0.5);
		assertThat(s.get("noisy").asBoolean()).isTrue();
	}

	@Test
	void aSteadyBaselineIsNotFlagged() {
		ObjectNode s = RoundSpread.ofRates(new double[] { 4.0, 5.0, 4.5 }, new double[] { 5.0, 5.5, 5.2 });
		assertThat(s.get("ratio_min").asDouble()).isEqualTo(0.8);
		assertThat(s.get("ratio_median").asDouble()).isEqualTo(0.865);
		assertThat(s.get("ratio_max").asDouble()).isEqualTo(0.909);
		assertThat(s.get("baseline_spread").asDouble()).isEqualTo(0.096);
		assertThat(s.get("kvferry_spread").asDouble()).isEqualTo(0.222);
		assertThat(s.get("noisy").asBoolean()).isFalse();
		// Just past the bound it is.
		double low = 5.2 * (1 - RoundSpread.NOISY) - 0.01;
		assertThat(RoundSpread.ofRates(new double[] { 1, 1, 1 }, new double[] { low, 5.2, 5.2 }).get("noisy")
				.asBoolean()).isTrue();
	}

	@Test
	void timedRatesCompareSpeedsAndAFailedRoundCountsAsNothing() {
		// kvferry took 10 ns where the pump took 8: 0.8 of its speed; a failed round (MAX_VALUE) is a ratio of 0.
		ObjectNode s = RoundSpread.ofRatesTimed(new long[] { 10, 10, Long.MAX_VALUE }, new long[] { 8, 8, 8 });
		assertThat(s.get("ratio_median").asDouble()).isEqualTo(0.8);
		assertThat(s.get("ratio_min").asDouble()).isZero();
	}

	@Test
	void latenciesAreComparedBlockByBlock() {
		// Ten iterations in five blocks of two; kvferry's latency is twice the ping-pong's in each, whatever the
		// single iterations' jitter.
		long[] rooms = { 20, 22, 40, 38, 20, 20, 60, 62, 20, 18 };
		long[] pings = { 10, 11, 20, 19, 10, 10, 30, 31, 10, 9 };
		ObjectNode s = RoundSpread.ofLatencies(rooms, pings, 5);
		assertThat(s.get("rounds").asInt()).isEqualTo(5);
		assertThat(s.get("ratio_min").asDouble()).isEqualTo(2.0);
		assertThat(s.get("ratio_max").asDouble()).isEqualTo(2.0);
		// Fewer iterations than blocks: one block per iteration.
		assertThat(RoundSpread.ofLatencies(new long[] { 3, 4 }, new long[] { 2, 2 }, 5).get("rounds").asInt())
				.isEqualTo(2);
	}

	@Test
	void roundsMustPair() {
		assertThatThrownBy(() -> RoundSpread.ofRates(new double[] { 1, 2 }, new double[] { 1 }))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("kvferry 2, baseline 1");
		assertThatThrownBy(() -> RoundSpread.ofRates(new double[0], new double[0]))
				.isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void theNoisyComparisonsOfAResultAreNamedByTheirPath() throws Exception {
		JsonNode result = BenchCommand.JSON.readTree("""
				{"bulk": {"ratio": 0.8, "ratio_spread": {"noisy": false}, "ratio2_spread": {"noisy": true}},
				 "many": {"ratio_spread": {"noisy": true}},
				 "ucx": [{"tiny_pages": {"ratio_to_pump_spread": {"noisy": false},
				          "tp2": {"ratio_to_pump_spread": {"noisy": true}}}}]}
				""");
		assertThat(RoundSpread.noisy(result)).containsExactly("bulk.ratio2", "many.ratio",
				"ucx[0].tiny_pages.tp2.ratio_to_pump");
	}

	@Test
	void theTableShowsEachComparisonsRoundsAndSaysWhichItCannotVouchFor() throws Exception {
		ObjectNode result = (ObjectNode) BenchCommand.JSON.readTree("""
				{"many": {"rooms": 1000, "gbps": 2.0, "baseline_gbps": 3.0, "ratio": 0.667, "rooms_per_second": 9000,
				          "frames": 4000, "failures": 0, "seconds": 0.5, "cpu_cores": 1.9}}
				""");
		((ObjectNode) result.get("many")).set("ratio_spread", RoundSpread.ofRates(new double[] { 2.0, 2.1, 1.9 },
				new double[] { 3.0, 2.0, 3.1 }));
		result.putArray("noisy").add("many.ratio");
		String table = BenchTable.render(result, ModelShape.llama3_8b(), true);
		assertThat(table).containsPattern("(?m)^ +ratio per round 0\\.67 \\(0\\.61-1\\.05 over 3\\); spread kvferry "
				+ "0\\.10, baseline 0\\.37  NOISY$");
		assertThat(table).contains("  noisy: many.ratio (a baseline's rounds spread over 0.25 of their median");
	}
}
