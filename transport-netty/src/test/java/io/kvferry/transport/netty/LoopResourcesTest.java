package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Random;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.spi.KVMessage;
import io.kvferry.test.RecordingHandler;
import io.kvferry.test.Sent;
import org.junit.jupiter.api.Test;
import reactor.netty.http.client.HttpClient;
import reactor.test.StepVerifier;

/** Transports sharing one set of event loops, which the caller made and the transports never shut down. */
class LoopResourcesTest {

	private static final Duration T = Duration.ofSeconds(30);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);

	@Test
	void aTransportGivenSharedLoopsLeavesThemRunningWhenDisposed() throws Exception {
		LoopResources loops = LoopResources.create("shared-loops", 1);
		try {
			NettyKVTransport first = NettyKVTransport.create().loopResources(loops);
			try (Loopback lo = Loopback.open(first, NettyKVTransport.create().eventLoopThreads(1))) {
				assertThat(lo.accepted.channel().eventLoop().parent()).isSameAs(loops.group());
			}
			StepVerifier.create(first.onDispose()).expectComplete().verify(T);
			assertThat(loops.group().isShuttingDown()).as("the caller's loops are the caller's to stop").isFalse();
			assertThat(loops.isDisposed()).isFalse();

			NettyKVTransport second = NettyKVTransport.create().loopResources(loops);
			try (Loopback lo = Loopback.open(second, NettyKVTransport.create().eventLoopThreads(1))) {
				KVMessage.AbortAck ack = new KVMessage.AbortAck(7);
				StepVerifier.create(Sent.now(lo.accepted, ack)).expectComplete().verify(T);
				assertThat(lo.connectedHandler.nextMessage(T)).isEqualTo(ack);
			}
		}
		finally {
			StepVerifier.create(loops.disposeLater()).expectComplete().verify(T);
		}
		assertThat(loops.group().isTerminated()).isTrue();
		assertThat(loops.isDisposed()).isTrue();
	}

	@Test
	void twoTransportsOnOneLoopResourcesExchangeARoom() {
		LoopResources loops = LoopResources.create("shared-loops", 2);
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		ReactorBootstrapClient client = ReactorBootstrapClient.create()
				.httpClient(HttpClient.create().runOn(loops.group()));
		NettyKVTransport prefill = NettyKVTransport.create().loopResources(loops);
		NettyKVTransport decode = NettyKVTransport.create().loopResources(loops);
		try {
			// A third transport on the same loops comes and goes first: its disposal must leave the loops running.
			NettyKVTransport passing = NettyKVTransport.create().loopResources(loops);
			passing.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler()).block(T);
			passing.disposeNow(T);

			KVCluster cluster = KVCluster.builder().shape(SHAPE).prefill(1, 1, 1).decode(1, 1).capacity(32, 4)
					.transport(prefill).decodeTransport(decode).bootstrapClient(client)
					.bootstrapAddress(server.address()).startNow(T);
			try {
				RoomResult result = cluster.run(1, 40, 3, new Random(1)).block(T);
				assertThat(result.failure()).isNull();
				assertThat(result.bytes()).isPositive();
				assertThat(prefill.eventLoopGroup()).isSameAs(loops.group());
				assertThat(decode.eventLoopGroup()).isSameAs(loops.group());
			}
			finally {
				cluster.close().block(T);
			}
		}
		finally {
			prefill.disposeNow(T);
			decode.disposeNow(T);
			client.dispose();
			server.disposeNow();
			loops.disposeLater().block(T);
		}
	}

	@Test
	void aTransportOnDisposedLoopsSaysSoWhenItFirstListens() {
		LoopResources loops = LoopResources.create("gone-loops", 1, false);
		NettyKVTransport transport = NettyKVTransport.create().loopResources(loops);
		loops.disposeLater().block(T);
		StepVerifier.create(transport.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler()))
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("loop resources gone-loops disposed"))
				.verify(T);
		transport.disposeNow(T);
	}

	@Test
	void aTransportWhoseLoopsWereDisposedInUseSaysSo() {
		LoopResources loops = LoopResources.create("stopped-loops", 1, false);
		NettyKVTransport transport = NettyKVTransport.create().loopResources(loops);
		transport.listen(new HostPort("127.0.0.1", 0), c -> new RecordingHandler()).block(T);
		loops.disposeLater().block(T);
		StepVerifier.create(transport.connect(new HostPort("127.0.0.1", 1), new RecordingHandler()))
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("event loops this transport was given are "
						+ "shut down"))
				.verify(Duration.ofSeconds(5));
		transport.disposeNow(T);
	}

	@Test
	void loopsAreNamedAndSized() {
		assertThatThrownBy(() -> LoopResources.create("x", 0)).hasMessage("threads : 0 (expected: >= 1)");
		assertThatThrownBy(() -> LoopResources.create(" ", 1))
				.hasMessage("name : blank (expected: a thread name prefix)");
		LoopResources nio = LoopResources.create("nio-loops", 1, false);
		assertThat(nio.isNative()).isFalse();
		assertThat(nio.toString()).isEqualTo("LoopResources{nio-loops, nio}");
		nio.disposeLater().block(T);
	}
}
