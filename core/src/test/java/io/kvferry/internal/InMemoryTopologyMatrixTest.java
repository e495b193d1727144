package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import io.kvferry.HostPort;
import io.kvferry.test.TopologyMatrix;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.params.ParameterizedTest;
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
}
