package io.kvferry.examples.engine;

import java.nio.ByteBuffer;
import java.util.List;

import io.kvferry.KVPoll;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.NativeMemory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Prefill on one instance, decode on another, kvferry between them over real sockets: decode continues from the
 * transferred KV and must generate what the same model generates in one process.
 */
@Timeout(60)
class TinyEngineTransferTest {

	// Page size 4, chunks of 8: one token; exactly one page; exactly one chunk; two chunks ending in a partial page;
	// four full pages in two chunks (decode then starts on a fresh page).
	private static final int[] LENGTHS = { 1, 4, 8, 13, 16 };

	@Test
	void theSingleProcessReferenceDecodesEveryRequestToItsLength() {
		TinyEngine engine = TinyEngine.of(1, 1);
		List<Generation> out = engine.runInOneProcess(engine.prompts(1, 3, 9, 17));
		assertThat(out).hasSize(3).allSatisfy(g -> {
			assertThat(g.ok()).isTrue();
			assertThat(g.tokens()).hasSize(engine.newTokens() + 1);
			assertThat(g.logits()).hasNumberOfRows(engine.newTokens());
			assertThat(g.maxLogitDifference(g)).isZero();
		});
	}

	@ParameterizedTest(name = "prefill TP{0} -> decode TP{1}")
	@CsvSource({ "1,1", "2,2", "2,1", "1,2", "4,2", "1,8" })
	void decodeFromTransferredKVMatchesTheSingleProcessReference(int prefillTp, int decodeTp) throws Exception {
		TinyEngine engine = TinyEngine.of(prefillTp, decodeTp);
		List<int[]> prompts = engine.prompts(7, LENGTHS);
		List<Generation> reference = engine.runInOneProcess(prompts);
		List<Generation> disaggregated = engine.runDisaggregated(prompts, (room, cache, table) -> { });

		assertThat(disaggregated).hasSameSizeAs(reference);
		for (int i = 0; i < reference.size(); i++) {
			Generation want = reference.get(i);
			Generation got = disaggregated.get(i);
			assertThat(got.failure()).as("room %d", got.room()).isNull();
			assertThat(got.tokens()).as("room %d tokens", got.room()).hasSize(engine.newTokens() + 1)
					.containsExactly(want.tokens());
			// Exact, not within a tolerance: the arithmetic is the same in the same order. Exactness also catches pages
			// landing in the wrong order, which attention (a sum over the tokens) would see only as rounding.
			assertThat(got.maxLogitDifference(want)).as("room %d max logit difference", got.room()).isZero();
			assertThat(got.states()).as("room %d states", got.room()).isSorted().endsWith(KVPoll.SUCCESS);
		}
	}

	@Test
	void oneCorruptedByteOfTransferredKVShowsInTheLogitsOfItsRoomOnly() throws Exception {
		TinyEngine engine = TinyEngine.of(2, 1);
		List<int[]> prompts = engine.prompts(7, 13, 8);
		List<Generation> reference = engine.runInOneProcess(prompts);
		long corrupted = reference.get(0).room();
		List<Generation> disaggregated = engine.runDisaggregated(prompts, (room, cache, table) -> {
			if (room == corrupted) {
				// The top exponent bit of one float: K of layer 0, the prompt's first token, first head, rank 0.
				MemoryRegion k0 = cache.kvArgs().get(0).kvRegions().get(0);
				ByteBuffer b = NativeMemory.byteBuffer(k0.itemAddress(table.page(0)) + 3, 1);
				b.put(0, (byte) (b.get(0) ^ 0x40));
			}
		});
		assertThat(disaggregated.get(0).maxLogitDifference(reference.get(0))).isGreaterThan(1e-3);
		assertThat(disaggregated.get(1).sameTokens(reference.get(1))).isTrue();
		assertThat(disaggregated.get(1).maxLogitDifference(reference.get(1))).isZero();
	}
}
