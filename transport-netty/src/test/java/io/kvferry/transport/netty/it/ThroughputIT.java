package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.LoopbackCluster.T;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import java.util.function.UnaryOperator;

import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Loopback throughput of one large room, for the figures in the issue notes; prints GB/s and asserts only that every
 * byte arrived. Opt-in, because paranoid leak detection (on in tests) slows the data path several times:
 * {@code mvn -f transport-netty/pom.xml test -Dtest=ThroughputIT -Dkvferry.throughput=true
 * -Dkvferry.test.argLine=-Dio.netty.leakDetection.level=disabled}.
 */
@EnabledIfSystemProperty(named = "kvferry.throughput", matches = "true")
class ThroughputIT {

	@ParameterizedTest(name = "P{0} -> D{1}")
	@CsvSource({ "1,1", "2,1", "1,2", "2,2" })
	void oneLargeRoom(int prefillTp, int decodeTp) {
		// Llama-3-8B shape: 32 layers × K,V × 32 KiB per page at TP 1 → 2 MiB per page; 128 pages = 256 MiB.
		int pages = 128;
		try (LoopbackCluster c = LoopbackCluster.start(ModelShape.llama3_8b(), prefillTp, 1, 1, decodeTp, 1, pages, 4,
				b -> b.contiguous(true))) {
			Random random = new Random(1);
			c.cluster.run(1, 16 * 8, 1, random).block(T);
			double best = 0;
			for (int i = 0; i < 3; i++) {
				RoomResult r = c.cluster.run(10 + i, pages * 16, 4, random).block(T);
				assertThat(r.failure()).isNull();
				best = Math.max(best, r.bytes() / (r.latencyNanos() / 1e9) / 1e9);
			}
			System.out.printf("THROUGHPUT P%d->D%d %s: %.2f GB/s (256 MiB room, best of 3)%n", prefillTp, decodeTp,
					prefillTp == decodeTp ? "equal TP" : "head-sliced", best);
		}
	}
}
