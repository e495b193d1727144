package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** A registry given the caller's jetcd client runs on it and leaves it open when disposed. */
class EtcdSharedClientIT {

	private static final Duration T = Duration.ofSeconds(20);
	private static final HostPort A = HostPort.parse("prefill-a:8998");

	@Test
	void aRegistryOnTheCallersClientLeavesItOpenWhenDisposed() {
		try (EtcdCluster etcd = EtcdCluster.start(1);
				Client jetcd = Client.builder()
						.endpoints(etcd.endpoints().stream().map(e -> "http://" + e).toArray(String[]::new)).waitForReady(false).retryMaxAttempts(0)
						.build()) {
			String prefix = "t-" + UUID.randomUUID();
			EtcdBootstrapClient registry = EtcdBootstrapClient.create(etcd.endpoints()).prefix(prefix).client(jetcd);
			PrefillRegistration rank = PrefillRegistration.prefill(ParallelLayout.SINGLE, "10.0.0.1", 17000, 16);
			StepVerifier.create(registry.register(A, rank)).expectComplete().verify(T);
			StepVerifier.create(registry.parallelInfo(A)).expectNext(new PrefillParallelInfo(1, 1, 1, 16))
					.expectComplete().verify(T);
			StepVerifier.create(registry.call("shared", c -> Mono.just(c))).expectNext(jetcd).expectComplete()
					.verify(T);

			registry.dispose();
			assertThat(registry.isDisposed()).isTrue();
			// The caller's client still answers: the registry did not close it.
			StepVerifier.create(Mono.fromFuture(() -> jetcd.getKVClient().get(ByteSequence.from(prefix,
					StandardCharsets.UTF_8))).map(r -> r.getHeader().getRevision()))
					.assertNext(revision -> assertThat(revision).isPositive())
					.expectComplete()
					.verify(T);
		}
	}
}
