package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.Stream;

import io.kvferry.HostPort;
import io.kvferry.test.TopologyMatrix;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import reactor.core.scheduler.Schedulers;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class InMemoryTopologyMatrixTest {

	static List<TopologyMatrix.Case> cases() {
		return TopologyMatrix.cases();
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("cases")
	void movesEveryByteOfEveryTopology(TopologyMatrix.Case c) {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		long pages = TopologyMatrix.run(c, transport, new InMemoryBootstrap(), new HostPort("127.0.0.1", 8998), 4);
		assertThat(pages).isPositive();
	}

	static Stream<Arguments> stripeCases() {
		return TopologyMatrix.stripeCases().stream().flatMap(c -> Stream.of(Arguments.of(c, 1), Arguments.of(c, 3)));
	}

	@ParameterizedTest(name = "{0} over {1} stripes")
	@MethodSource("stripeCases")
	void movesEveryByteOverOtherStripeCounts(TopologyMatrix.Case c, int stripes) {
		// A scheduler of several threads: each connection's deliveries run on a worker of their own, as event loops.
		InMemoryKVTransport transport = InMemoryKVTransport.create(Schedulers.parallel());
		long pages = TopologyMatrix.run(c, transport, new InMemoryBootstrap(), new HostPort("127.0.0.1", 8998), 4,
				stripes);
		assertThat(pages).isPositive();
	}
}
