package io.kvferry.transport.netty.it;

import java.time.Duration;

import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.test.AbortHoldingTransport;
import io.kvferry.harness.KVCluster;
import io.kvferry.test.LayerwiseScenarios;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Layer-wise streaming over real sockets, with the real bootstrap server and client. */
class LayerwiseIT {

	private static final Duration T = Duration.ofSeconds(30);

	private DisposableBootstrapServer server;
	private ReactorBootstrapClient client;
	private NettyKVTransport transport;
	private AbortHoldingTransport held;
	private KVCluster cluster;

	@BeforeEach
	void start() {
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		client = ReactorBootstrapClient.create();
		transport = NettyKVTransport.create();
		held = new AbortHoldingTransport(transport);
		cluster = LayerwiseScenarios.cluster().transport(transport).decodeTransport(held).bootstrapClient(client)
				.bootstrapAddress(server.address()).startNow(T);
	}

	@AfterEach
	void close() {
		cluster.close().block(T);
		transport.disposeNow(T);
		client.dispose();
		server.disposeNow();
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
