package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;

import io.etcd.jetcd.Client;
import io.grpc.netty.GrpcSslContexts;
import io.kvferry.HostPort;
import io.netty.handler.ssl.SslContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client is a value: every setter returns a new client and leaves the one it was called on as it was, so two
 * clients configured from one base never see each other's settings.
 */
class EtcdClientSettingsTest {

	private static final List<HostPort> ENDPOINTS = List.of(HostPort.parse("127.0.0.1:2379"));

	@TempDir
	Path dir;

	@Test
	void clientsDerivedFromOneBaseDoNotShareSettings() {
		EtcdTestPki pki = EtcdTestPki.create(dir);
		EtcdBootstrapClient base = EtcdBootstrapClient.create(ENDPOINTS);

		EtcdBootstrapClient a = base.leaseTtl(Duration.ofSeconds(4)).prefix("a").credentials("user-a", "pw")
				.timeout(Duration.ofSeconds(1));
		EtcdBootstrapClient b = base.leaseTtl(Duration.ofSeconds(7)).prefix("b").tls(pki.ca());

		assertThat(a.leaseTtl()).isEqualTo(Duration.ofSeconds(4));
		assertThat(a.keys().prefix()).isEqualTo("a");
		assertThat(a.user()).isEqualTo("user-a");
		assertThat(a.isSecure()).isFalse();

		assertThat(b.leaseTtl()).isEqualTo(Duration.ofSeconds(7));
		assertThat(b.keys().prefix()).isEqualTo("b");
		assertThat(b.user()).isNull();
		assertThat(b.isSecure()).isTrue();

		assertThat(base.leaseTtl()).isEqualTo(EtcdBootstrapClient.DEFAULT_LEASE_TTL);
		assertThat(base.keys().prefix()).isEqualTo(RegistryKeys.DEFAULT_PREFIX);
		assertThat(base.user()).isNull();
		assertThat(base.isSecure()).isFalse();
		assertThat(List.of(base.endpoints(), a.endpoints(), b.endpoints())).containsOnly(ENDPOINTS);
	}

	@Test
	void everySetterReturnsANewClientAndLeavesItsOwnAsItWas() throws Exception {
		EtcdTestPki pki = EtcdTestPki.create(dir);
		SslContext context = GrpcSslContexts.forClient().trustManager(pki.ca().toFile()).build();
		try (Client jetcd = Client.builder().endpoints("http://127.0.0.1:2379").waitForReady(false)
				.retryMaxAttempts(0).build()) {
			EtcdBootstrapClient base = EtcdBootstrapClient.create(ENDPOINTS);
			String before = base.toString();
			List<UnaryOperator<EtcdBootstrapClient>> setters = List.of(
					c -> c.timeout(Duration.ofSeconds(1)),
					c -> c.leaseTtl(Duration.ofSeconds(9)),
					c -> c.prefix("other"),
					c -> c.tls(pki.ca()),
					c -> c.tls(pki.ca(), pki.clientCert(), pki.clientKey()),
					c -> c.tls(context),
					c -> c.credentials("kvferry", "pw"),
					c -> c.client(jetcd));
			for (UnaryOperator<EtcdBootstrapClient> setter : setters) {
				EtcdBootstrapClient derived = setter.apply(base);
				assertThat(derived).isNotSameAs(base);
				assertThat(base.toString()).as("the base after a setter").isEqualTo(before);
				assertThat(base.leaseTtl()).isEqualTo(EtcdBootstrapClient.DEFAULT_LEASE_TTL);
			}
		}
	}
}
