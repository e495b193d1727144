package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.LoopbackCluster.T;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import java.util.function.UnaryOperator;

import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Flux;

/** Rooms moved end to end over real sockets on loopback, every byte checked. */
class KVTransferIT {

	/** Llama-3-8B-like (32 layers, 32 KiB per page per layer buffer), and its MLA analogue (latent 576 × bf16 → 18 KiB pages). */
	private static ModelShape shape(boolean mla) {
		return mla ? new ModelShape(32, 1, 576, 2, 16, true, 0, 64, 0) : ModelShape.llama3_8b();
	}

	@ParameterizedTest(name = "P{0} <-> D{1} mla={2}")
	@CsvSource({ "1,1,false", "2,2,false", "1,1,true", "2,2,true" })
	void movesRealisticRoomsByteExactInManyChunks(int prefillTp, int decodeTp, boolean mla) {
		try (LoopbackCluster c = LoopbackCluster.start(shape(mla), prefillTp, 1, 1, decodeTp, 1, 48, 16,
				UnaryOperator.identity())) {
			Random random = new Random(prefillTp * 31 + decodeTp + (mla ? 7 : 0));
			long pages = 0;
			for (long room = 1; room <= 12; room++) {
				RoomResult r = c.cluster.run(room, 1 + random.nextInt(40 * 16), 1 + random.nextInt(8), random).block(T);
				assertThat(r.failure()).as("room %d", room).isNull();
				pages += r.pages();
			}
			assertThat(pages).isGreaterThan(12);
			assertThat(c.cluster.freeDecodePages()).as("every page came back").isEqualTo(48);
		}
	}

	@Test
	void movesHundredsOfConcurrentRoomsAcrossTwoByTwoRanks() {
		ModelShape small = new ModelShape(4, 2, 64, 2, 16, false, 0, 64, 0);
		try (LoopbackCluster c = LoopbackCluster.start(small, 2, 1, 1, 2, 1, 1600, 400, UnaryOperator.identity())) {
			Random random = new Random(5);
			List<RoomResult> results = Flux.range(1, 300)
					.flatMap(i -> c.cluster.run(i, 1 + random.nextInt(64), 1 + random.nextInt(3), new Random(i)), 300)
					.collectList()
					.block(T);
			assertThat(results).hasSize(300).allSatisfy(r -> assertThat(r.failure()).as("room %d", r.room()).isNull());
		}
	}
}
