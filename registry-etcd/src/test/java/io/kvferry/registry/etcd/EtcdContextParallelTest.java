package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillRegistration;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** A CP rank is refused by name before any etcd call: CP ranks would otherwise overwrite each other's endpoint. */
class EtcdContextParallelTest {

	@Test
	void aContextParallelRankIsRefusedByName() {
		// Nothing listens there: the refusal must come before any connection is tried.
		EtcdBootstrapClient client = EtcdBootstrapClient.create("etcd://127.0.0.1:1");
		try {
			PrefillRegistration cp = PrefillRegistration.prefill(ParallelLayout.SINGLE.withAttnCp(2, 1), "127.0.0.1",
					17000, 16);
			StepVerifier.create(client.register(new HostPort("127.0.0.1", 8998), cp))
					.expectErrorSatisfies(e -> {
						assertThat(e).isInstanceOf(BootstrapException.class);
						assertThat(e.getMessage()).contains("attn_cp_size=2 is not supported by the etcd registry");
					})
					.verify(Duration.ofSeconds(10));
		}
		finally {
			client.dispose();
		}
	}
}
