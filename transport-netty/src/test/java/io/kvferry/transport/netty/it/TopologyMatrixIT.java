package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.test.TopologyMatrix;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The whole topology matrix over real sockets, with the real bootstrap server and client. */
class TopologyMatrixIT {

	private static final NettyKVTransport TRANSPORT = NettyKVTransport.create();
	private static final ReactorBootstrapClient CLIENT = ReactorBootstrapClient.create();

	static List<TopologyMatrix.Case> cases() {
		return TopologyMatrix.cases();
	}

	@AfterAll
	static void close() {
		TRANSPORT.disposeNow(Duration.ofSeconds(30));
		CLIENT.dispose();
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("cases")
	void movesEveryByteOfEveryTopology(TopologyMatrix.Case c) {
		// Each prefill instance gets its own bootstrap server: the first registration fixes an instance's sizes.
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		try {
			assertThat(TopologyMatrix.run(c, TRANSPORT, CLIENT, server.address(), 3)).isPositive();
		}
		finally {
			server.disposeNow();
		}
	}

	static Stream<Arguments> stripeCases() {
		return TopologyMatrix.stripeCases().stream().flatMap(c -> Stream.of(Arguments.of(c, 1), Arguments.of(c, 3)));
	}

	@ParameterizedTest(name = "{0} over {1} stripes")
	@MethodSource("stripeCases")
	void movesEveryByteOverOtherStripeCounts(TopologyMatrix.Case c, int stripes) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		try {
			assertThat(TopologyMatrix.run(c, TRANSPORT, CLIENT, server.address(), 3, stripes)).isPositive();
		}
		finally {
			server.disposeNow();
		}
	}
}
