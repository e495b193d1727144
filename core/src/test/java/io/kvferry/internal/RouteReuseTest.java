package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RegistryChange;
import io.kvferry.spi.CloseReason;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * Decode reuses what it resolved for an instance only while resolving again would give the same: after the registry
 * says the instance changed, or after the connection closed, the next room fetches and connects anew.
 */
class RouteReuseTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final CountingRegistry registry = new CountingRegistry();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@BeforeEach
	void start() {
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(registry)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport).bootstrapClient(registry)
				.startNow();
	}

	@AfterEach
	void stop() {
		prefill.disposeNow(T);
		decode.disposeNow(T);
	}

	private void room(long room) {
		int[] src = { (int) room % 8 };
		int[] dst = { (int) (room + 3) % 8 };
		prefillMem.fill(room, src, 0, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
		receiver.sendMetadata(dst, 1, new int[0]);
		KVSender sender = prefill.sender(room);
		sender.init(1, 0);
		sender.send(src, new int[0]);
		StepVerifier.create(receiver.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(room, dst, 1, new int[0])).isNull();
	}

	@Test
	void laterRoomsOfAnInstanceAskTheRegistryNothing() {
		room(1);
		room(2);
		room(3);
		assertThat(registry.sizes.get()).isEqualTo(1);
		assertThat(registry.endpoints.get()).isEqualTo(1);
	}

	@Test
	void aRoomAfterTheInstanceChangedFetchesItsSizesAgain() {
		room(1);
		registry.emit(RegistryChange.instance(BOOTSTRAP));
		room(2);
		assertThat(registry.sizes.get()).isEqualTo(2);
		room(3);
		assertThat(registry.sizes.get()).isEqualTo(2);
	}

	@Test
	void aRoomAfterTheConnectionClosedConnectsAgain() {
		room(1);
		KVReceiver live = decode.receiver(BOOTSTRAP, 2);
		live.sendMetadata(new int[] { 2 }, 0, new int[0]);
		// Prefill has the room's request: nothing is in flight when the connection goes.
		StepVerifier.create(prefill.sender(2).states()).thenConsumeWhile(s -> s != KVPoll.WAITING_FOR_INPUT)
				.expectNext(KVPoll.WAITING_FOR_INPUT).thenCancel().verify(T);
		transport.disconnectAll(new CloseReason(CloseReason.Kind.PEER_CLOSED, "cut by the test"));
		// The live room fails once decode handled the close (its session is gone by then).
		StepVerifier.create(live.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("Lost connection with prefill rank")
						.hasMessageContaining("cut by the test"))
				.verify(T);
		room(3);
		assertThat(registry.endpoints.get()).isEqualTo(2);
		room(4);
		assertThat(registry.endpoints.get()).isEqualTo(2);
	}

	/** The in-memory registry, counting look-ups, with changes the test can announce. */
	private static final class CountingRegistry implements BootstrapClient {
		final InMemoryBootstrap delegate = new InMemoryBootstrap();
		final AtomicInteger sizes = new AtomicInteger();
		final AtomicInteger endpoints = new AtomicInteger();
		final Sinks.Many<RegistryChange> changes = Sinks.many().multicast().directBestEffort();

		void emit(RegistryChange change) {
			assertThat(changes.tryEmitNext(change)).isEqualTo(Sinks.EmitResult.OK);
		}

		@Override
		public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
			return delegate.register(bootstrap, registration);
		}

		@Override
		public Mono<Void> deregister(HostPort bootstrap, PrefillRegistration registration) {
			return delegate.deregister(bootstrap, registration);
		}

		@Override
		public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
			return delegate.parallelInfo(bootstrap).doOnSubscribe(s -> sizes.incrementAndGet());
		}

		@Override
		public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
			return rankEndpoint(bootstrap, dpGroup, 0, tpRank, ppRank);
		}

		@Override
		public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
			return delegate.rankEndpoint(bootstrap, dpGroup, cpRank, tpRank, ppRank)
					.doOnSubscribe(s -> endpoints.incrementAndGet());
		}

		@Override
		public Mono<Void> health(HostPort bootstrap) {
			return delegate.health(bootstrap);
		}

		@Override
		public Flux<RegistryChange> changes() {
			return Flux.merge(delegate.changes(), changes.asFlux());
		}
	}
}
