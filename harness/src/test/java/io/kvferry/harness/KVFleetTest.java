package io.kvferry.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.PrefillSizes;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** Rooms between every prefill and every decode instance of a small fleet, on the in-memory transport. */
class KVFleetTest {

	private static final Duration TIMEOUT = Duration.ofSeconds(30);
	private static final ModelShape SHAPE = new ModelShape(2, 4, 16, 2, 4, false, 0, 16, 0);

	@Test
	void everyPairOfInstancesMovesVerifiedRooms() {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		List<HostPort> bootstraps = List.of(new HostPort("prefill-a", 8998), new HostPort("prefill-b", 8998));
		KVFleet.Builder builder = KVFleet.builder().shape(SHAPE).instances(2, 3).tp(2).capacity(32, 8)
				.transport(transport).bootstrapClient(new MapRegistry()).bootstrapAddresses(bootstraps);
		List<KVFleet> started = new ArrayList<>();
		StepVerifier.create(builder.start())
				.assertNext(started::add)
				.expectComplete()
				.verify(TIMEOUT);
		KVFleet fleet = started.get(0);
		assertThat(fleet.managers()).hasSize(10).doesNotContainNull();
		Random random = new Random(7);
		List<Mono<RoomResult>> rooms = new ArrayList<>();
		long room = 1;
		for (int p = 0; p < 2; p++) {
			for (int d = 0; d < 3; d++) {
				rooms.add(fleet.run(room++, p, d, 1 + random.nextInt(40), new Random(room)));
			}
		}
		StepVerifier.create(Flux.merge(rooms).collectList())
				.assertNext(results -> {
					assertThat(results).hasSize(6);
					assertThat(results).allSatisfy(r -> assertThat(r.failure()).isNull());
					assertThat(results).allSatisfy(r -> assertThat(r.bytes()).isPositive());
				})
				.expectComplete()
				.verify(TIMEOUT);
		StepVerifier.create(fleet.close()).expectComplete().verify(TIMEOUT);
		assertThat(fleet.managers()).allSatisfy(m -> assertThat(m.isDisposed()).isTrue());
	}

	@Test
	void startRefusesBootstrapAddressesThatAreNotOnePerPrefillInstance() {
		KVFleet.Builder builder = KVFleet.builder().shape(SHAPE).instances(2, 1).transport(InMemoryKVTransport.create())
				.bootstrapClient(new MapRegistry()).bootstrapAddresses(List.of(new HostPort("prefill-a", 8998)));
		StepVerifier.create(builder.start())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("bootstrapAddresses : 1 (expected: one "
						+ "per prefill instance, 2)"))
				.verify(TIMEOUT);
	}

	/** Registrations in a map, answering as the bootstrap server does once every rank registered. */
	private static final class MapRegistry implements BootstrapClient {
		private final Map<HostPort, PrefillSizes> sizes = new ConcurrentHashMap<>();
		private final Map<String, HostPort> ranks = new ConcurrentHashMap<>();

		@Override
		public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
			return Mono.fromRunnable(() -> {
				sizes.putIfAbsent(bootstrap, PrefillSizes.declaredBy(registration));
				ranks.put(bootstrap + "/" + registration.layout().dpGroup() + "/" + registration.layout().attnTpRank()
						+ "/" + registration.layout().ppRank(), new HostPort(registration.rankIp(),
						registration.rankPort()));
			});
		}

		@Override
		public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
			return Mono.fromCallable(() -> {
				PrefillSizes s = sizes.get(bootstrap);
				if (s == null) {
					throw new BootstrapException(BootstrapException.Kind.NOT_READY, 503, bootstrap + " not ready");
				}
				return s.toParallelInfo();
			});
		}

		@Override
		public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
			return Mono.fromCallable(() -> {
				HostPort endpoint = ranks.get(bootstrap + "/" + dpGroup + "/" + tpRank + "/" + ppRank);
				if (endpoint == null) {
					throw new BootstrapException(BootstrapException.Kind.NOT_FOUND, 404, bootstrap + " rank " + tpRank);
				}
				return endpoint;
			});
		}

		@Override
		public Mono<Void> health(HostPort bootstrap) {
			return Mono.empty();
		}
	}
}
