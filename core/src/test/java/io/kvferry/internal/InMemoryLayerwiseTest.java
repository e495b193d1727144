package io.kvferry.internal;

import java.time.Duration;

import io.kvferry.HostPort;
import io.kvferry.test.AbortHoldingTransport;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.KVCluster;
import io.kvferry.test.LayerwiseScenarios;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Layer-wise streaming over the in-memory transport. */
class InMemoryLayerwiseTest {

	private static final Duration T = Duration.ofSeconds(20);

	private KVCluster cluster;
	private AbortHoldingTransport held;

	@BeforeEach
	void start() {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		held = new AbortHoldingTransport(transport);
		cluster = LayerwiseScenarios.cluster().transport(transport).decodeTransport(held)
				.bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(new HostPort("127.0.0.1", 8998)).startNow(T);
	}

	@AfterEach
	void close() {
		cluster.close().block(T);
	}

	@Test
	void layersLandInTheOrderSent() {
		LayerwiseScenarios.layersLandInTheOrderSent(cluster);
	}

	@Test
	void wholeAndLayerwiseChunksMix() {
		LayerwiseScenarios.wholeAndLayerwiseChunksMix(cluster);
	}

	@Test
	void decodeAbortBetweenLayersFencesTheRest() {
		LayerwiseScenarios.decodeAbortBetweenLayersFencesTheRest(cluster, held);
	}

	@Test
	void prefillAbortBetweenLayersEndsTheStream() {
		LayerwiseScenarios.prefillAbortBetweenLayersEndsTheStream(cluster);
	}
}
