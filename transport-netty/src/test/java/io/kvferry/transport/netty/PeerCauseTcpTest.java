package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.test.PeerCauseScenario;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Over loopback TCP, decode fails a room with the cause its prefill rank's status names in its failure code, the
 * overload hint from its own field: the codes cross the wire as the codec writes them.
 */
class PeerCauseTcpTest {

	private final List<NettyKVTransport> transports = new ArrayList<>();

	@AfterEach
	void close() {
		transports.forEach(t -> t.disposeNow(Duration.ofSeconds(10)));
	}

	@Test
	void everyCodeArrivesAsItsCauseAndTheWordsAreNotRead() {
		try (PeerCauseScenario scenario = new PeerCauseScenario(() -> {
			NettyKVTransport t = NettyKVTransport.create().eventLoopThreads(1);
			transports.add(t);
			return t;
		})) {
			scenario.everyCodeArrivesAsItsCause();
			scenario.theReasonsWordsAreNotRead();
		}
	}
}
