package io.kvferry.examples.engine;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The model alone, in one process: deterministic, and indifferent to chunking and to how heads are split over ranks. */
class TinyTransformerTest {

	private static final TinyConfig TINY = TinyConfig.tiny();
	private static final int PAGE = 4;
	private static final int[] PROMPT = { 5, 17, 99, 3, 3, 64, 127, 0, 42, 8, 1 };

	private static PageTable reserved(PagedKVCache cache, int tokens) {
		PageTable table = new PageTable();
		cache.reserve(table, tokens);
		return table;
	}

	private static float[] lastLogits(TinyTransformer model, int tp, int chunk, long scatter) {
		PagedKVCache cache = PagedKVCache.allocate(model.config(), tp, PAGE, 16, 1, scatter);
		PageTable table = reserved(cache, PROMPT.length);
		float[] logits = null;
		for (int start = 0; start < PROMPT.length; start += chunk) {
			logits = model.prefill(PROMPT, start, Math.min(PROMPT.length, start + chunk), cache, table);
		}
		return logits;
	}

	@Test
	void sameConfigurationGivesTheSameLogitsBitForBit() {
		float[] a = lastLogits(new TinyTransformer(TINY), 1, PROMPT.length, 1);
		float[] b = lastLogits(new TinyTransformer(TINY), 1, PROMPT.length, 1);
		assertThat(a).hasSize(TINY.vocab()).containsExactly(b);
		assertThat(a).doesNotContain(Float.NaN);
	}

	@Test
	void anotherWeightSeedIsAnotherModel() {
		TinyConfig other = new TinyConfig(TINY.layers(), TINY.queryHeads(), TINY.kvHeads(), TINY.headDim(), TINY.ffn(),
				TINY.vocab(), TINY.ropeTheta(), TINY.weightSeed() + 1);
		float[] a = lastLogits(new TinyTransformer(TINY), 1, PROMPT.length, 1);
		float[] b = lastLogits(new TinyTransformer(other), 1, PROMPT.length, 1);
		assertThat(a).isNotEqualTo(b);
	}

	@Test
	void chunkSizeTpSizeAndPagePlacementDoNotChangeOneBit() {
		TinyTransformer model = new TinyTransformer(TINY);
		float[] want = lastLogits(model, 1, PROMPT.length, 1);
		for (int tp : new int[] { 1, 2, 4, 8 }) {
			for (int chunk : new int[] { 1, 3, 8 }) {
				assertThat(lastLogits(model, tp, chunk, tp * 31L + chunk)).as("TP %d, chunk %d", tp, chunk)
						.containsExactly(want);
			}
		}
	}

	@Test
	void attentionReadsTheCacheItDoesNotRecomputeThePrompt() {
		TinyTransformer model = new TinyTransformer(TINY);
		PagedKVCache cache = PagedKVCache.allocate(TINY, 1, PAGE, 4, 1, 1);
		PageTable table = reserved(cache, 3);
		// Positions 0 and 1 were never written: their K and V are still the pool's NaN.
		assertThat(model.forward(7, 2, cache, table, true)).containsOnly(Float.NaN);
	}

	@Test
	void greedySamplingTakesTheFirstLargestLogit() {
		assertThat(TinyTransformer.argmax(new float[] { 1, 3, 2, 3 })).isEqualTo(1);
	}

	@Test
	void refusesTokensAndPositionsOutsideTheModelAndTheTable() {
		TinyTransformer model = new TinyTransformer(TINY);
		PagedKVCache cache = PagedKVCache.allocate(TINY, 1, PAGE, 4, 1, 1);
		PageTable table = reserved(cache, 1);
		assertThatThrownBy(() -> model.forward(TINY.vocab(), 0, cache, table, true))
				.hasMessage("token : 128 (expected: 0..127)");
		assertThatThrownBy(() -> model.forward(0, PAGE, cache, table, true))
				.hasMessage("position : 4 (expected: 0..3, the tokens the page table covers)");
	}
}
