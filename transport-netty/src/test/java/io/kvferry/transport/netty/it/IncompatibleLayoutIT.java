package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import java.util.function.UnaryOperator;

import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * Prefill TP 3 against decode TP 2 cannot work: every room must fail with a message naming both sizes, while both
 * sides abort each other's ranks from their completion callbacks (as a router does), and the bootstrap server, which
 * shares its event loops with the bootstrap client, keeps answering.
 */
class IncompatibleLayoutIT {

	@Test
	void roomsFailNamingBothTpSizesAndEveryoneKeepsAnswering() {
		ModelShape shape = new ModelShape(2, 6, 16, 2, 4, false, 0, 64, 0);
		try (LoopbackCluster c = LoopbackCluster.start(shape, 3, 1, 1, 2, 1, 128, 16, UnaryOperator.identity())) {
			List<RoomResult> results = Flux.range(1, 8).flatMap(i -> c.cluster.run(i, 40, 2, new Random(i)), 4)
					.collectList().block(LoopbackCluster.T);
			assertThat(results).hasSize(8).allSatisfy(r -> assertThat(r.failure())
					.contains("prefill attn_tp_size=3 and decode attn_tp_size=2"));
			StepVerifier.create(c.client.health(c.server.address())).expectComplete().verify(LoopbackCluster.T);
			StepVerifier.create(c.client.parallelInfo(c.server.address())).expectNextCount(1).expectComplete()
					.verify(LoopbackCluster.T);
		}
	}
}
