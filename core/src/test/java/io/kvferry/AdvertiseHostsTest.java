package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;

import io.kvferry.bootstrap.RankRoute;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A prefill rank of several network interfaces registers one endpoint per interface, all with its listening port, the
 * first where SGLang reads it; a spec refuses lists that could not be registered.
 */
class AdvertiseHostsTest {

	private static final Duration T = Duration.ofSeconds(20);
	private static final HostPort BOOTSTRAP = new HostPort("10.9.9.9", 8998);

	@Test
	void theRankRegistersEveryAddressWithItsListeningPortTheFirstAsItsEndpoint() {
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		RankMemory memory = RankMemory.prefill(new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0), ParallelLayout.SINGLE, 8, 2, 0);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(memory.kvArgs()).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).transport(InMemoryKVTransport.create())
				.bindAddress(new HostPort("127.0.0.1", 0))
				.advertiseHosts(List.of("10.0.0.5", "10.1.0.5", "fd00::5")).startNow(T);
		try {
			int port = prefill.endpoint().port();
			assertThat(prefill.endpoint()).isEqualTo(new HostPort("10.0.0.5", port));
			StepVerifier.create(bootstrap.rankRoute(BOOTSTRAP, 0, 0, 0, 0))
					.expectNext(new RankRoute(new HostPort("10.0.0.5", port), prefill.incarnation(),
							List.of(new HostPort("10.1.0.5", port), new HostPort("fd00::5", port))))
					.expectComplete()
					.verify(T);
		}
		finally {
			prefill.disposeNow(T);
		}
	}

	@Test
	void aSpecTakesOneToEightDistinctAddressesAndOneAddressForgetsTheOthers() {
		PrefillSpec spec = KVManagerSpec.prefill().advertiseHosts(List.of("10.0.0.5", "10.1.0.5"));
		assertThat(spec.config().advertiseHost()).isEqualTo("10.0.0.5");
		assertThat(spec.config().moreAdvertiseHosts()).containsExactly("10.1.0.5");
		assertThat(spec.advertiseHost("10.2.0.5").config().moreAdvertiseHosts()).isEmpty();
		assertThatThrownBy(() -> KVManagerSpec.prefill().advertiseHosts(List.of()))
				.hasMessageContaining("hosts : 0 (expected: 1..8)");
		assertThatThrownBy(() -> KVManagerSpec.prefill().advertiseHosts(List.of("a", "b", "c", "d", "e", "f", "g", "h",
				"i"))).hasMessageContaining("hosts : 9 (expected: 1..8)");
		assertThatThrownBy(() -> KVManagerSpec.prefill().advertiseHosts(List.of("10.0.0.5", "10.0.0.5")))
				.hasMessageContaining("distinct");
		assertThatThrownBy(() -> KVManagerSpec.prefill().advertiseHosts(List.of("10.0.0.5", "")))
				.hasMessageContaining("host : empty");
	}
}
