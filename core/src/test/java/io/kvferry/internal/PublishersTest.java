package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Random;

import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.KVManagerSpec;
import io.kvferry.PrefillKVManager;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.test.NoopConnectionHandler;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** StepVerifier checks of the public Monos of core not covered elsewhere: laziness, completion and errors. */
class PublishersTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);

	@Test
	void startIsLazyAndRegistersThePrefillRank() {
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		Mono<io.kvferry.PrefillKVManager> start = KVManagerSpec.prefill()
				.kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.start();
		StepVerifier.create(bootstrap.parallelInfo(BOOTSTRAP)).expectError(BootstrapException.class).verify(T);
		io.kvferry.PrefillKVManager[] started = new io.kvferry.PrefillKVManager[1];
		StepVerifier.create(start)
				.assertNext(m -> {
					assertThat(m.endpoint().host()).isEqualTo("127.0.0.1");
					started[0] = m;
				})
				.expectComplete()
				.verify(T);
		StepVerifier.create(bootstrap.parallelInfo(BOOTSTRAP))
				.expectNext(new PrefillParallelInfo(1, 1, 1, SHAPE.pageSize()))
				.expectComplete()
				.verify(T);
		started[0].disposeNow(T);
	}

	@Test
	void prefillRegistersAgainSoARestartedBootstrapServerLearnsItBack() {
		reactor.test.scheduler.VirtualTimeScheduler vts = reactor.test.scheduler.VirtualTimeScheduler.create();
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		io.kvferry.PrefillKVManager m = KVManagerSpec.prefill()
				.kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs())
				.transport(InMemoryKVTransport.create(vts)).bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP)
				.bindAddress(new HostPort("127.0.0.1", 0)).timer(vts).reregisterInterval(Duration.ofSeconds(10))
				.startNow();
		bootstrap.reset();
		StepVerifier.create(bootstrap.parallelInfo(BOOTSTRAP)).expectError(BootstrapException.class).verify(T);
		vts.advanceTimeBy(Duration.ofSeconds(10));
		StepVerifier.create(bootstrap.rankEndpoint(BOOTSTRAP, 0, 0, 0)).expectNext(m.endpoint()).expectComplete()
				.verify(T);
		m.dispose();
		bootstrap.reset();
		vts.advanceTimeBy(Duration.ofSeconds(30));
		StepVerifier.create(bootstrap.parallelInfo(BOOTSTRAP)).as("a closed manager stops registering")
				.expectError(BootstrapException.class).verify(T);
	}

	@Test
	void startSignalsAMissingPartAsAnError() {
		StepVerifier.create(KVManagerSpec.decode().start())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("kvArgs : missing"))
				.verify(T);
	}

	@Test
	void startFailsWhenRegistrationFails() {
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		bootstrap.setDown(true);
		StepVerifier.create(KVManagerSpec.prefill()
				.kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs())
				.transport(InMemoryKVTransport.create()).bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP)
				.start())
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BootstrapException.class)
						.hasMessageContaining("down"))
				.verify(T);
	}

	@Test
	void inMemoryBootstrapAnswersLikeTheServer() {
		InMemoryBootstrap b = new InMemoryBootstrap();
		PrefillRegistration r0 = PrefillRegistration.prefill(ParallelLayout.tp(2, 0), "10.0.0.1", 5000, 16);
		StepVerifier.create(b.register(BOOTSTRAP, r0)).expectComplete().verify(T);
		StepVerifier.create(b.parallelInfo(BOOTSTRAP))
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("(1 workers registered)"))
				.verify(T);
		StepVerifier.create(b.rankEndpoint(BOOTSTRAP, 0, 0, 0)).expectNext(new HostPort("10.0.0.1", 5000))
				.expectComplete().verify(T);
		StepVerifier.create(b.rankEndpoint(BOOTSTRAP, 0, 1, 0))
				.expectErrorSatisfies(e -> assertThat(((BootstrapException) e).kind())
						.isEqualTo(BootstrapException.Kind.NOT_FOUND))
				.verify(T);
		StepVerifier.create(b.health(BOOTSTRAP)).expectComplete().verify(T);
	}

	@Test
	void inMemoryTransportConnectsDeliversAndRefuses() {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		StepVerifier.create(transport.connect(new HostPort("127.0.0.1", 1), new NoopConnectionHandler()))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
						.hasMessageContaining("nothing listens at 127.0.0.1:1"))
				.verify(T);
		InMemoryKVTransport.Listener listener = transport.listen(new HostPort("127.0.0.1", 0), c -> new NoopConnectionHandler())
				.block(T);
		StepVerifier.create(transport.listen(listener.address(), c -> new NoopConnectionHandler()))
				.expectErrorMessage("address already in use: " + listener.address())
				.verify(T);
		KVConnection conn = transport.connect(listener.address(), new NoopConnectionHandler()).block(T);
		StepVerifier.create(conn.write(new KVMessage.AbortAck(1))).expectComplete().verify(T);
		conn.close("done");
		StepVerifier.create(conn.write(new KVMessage.AbortAck(2))).expectError(KVFerryException.class).verify(T);
		listener.dispose();
	}

	@Test
	void clusterRunAndCloseComplete() {
		KVCluster c = KVCluster.builder().shape(SHAPE).capacity(16, 4).transport(InMemoryKVTransport.create())
				.bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(BOOTSTRAP).start().block(T);
		StepVerifier.create(c.run(1, 10, 2, new Random(1)))
				.assertNext(r -> assertThat(r.ok()).isTrue())
				.expectComplete()
				.verify(T);
		StepVerifier.create(c.run(2, 1000, 2, new Random(1)))
				.assertNext(r -> assertThat(r.failure()).contains("out of pages"))
				.expectComplete()
				.verify(T);
		StepVerifier.create(c.close()).expectComplete().verify(T);
	}
}
