package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillRegistration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.test.StepVerifier;

/**
 * The registry against a real etcd that serves clients over TLS only and requires client certificates
 * ({@code --cert-file --key-file --client-cert-auth --trusted-ca-file}): a client with the CA and a client
 * certificate works; one without the certificate, trusting another CA, or speaking plain http fails at once with a
 * message that names the endpoint and what failed.
 */
class EtcdTlsIT {

	static final Duration T = Duration.ofSeconds(20);
	/** Long enough that a failure reported well before it was not retried until the timeout. */
	static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);
	static final HostPort A = HostPort.parse("prefill-a:8998");

	@TempDir
	static Path dir;

	static EtcdTestPki pki;
	static EtcdCluster etcd;

	@BeforeAll
	static void startEtcd() {
		pki = EtcdTestPki.create(dir);
		etcd = EtcdCluster.startTls(1, pki, true);
	}

	@AfterAll
	static void stopEtcd() {
		if (etcd != null) {
			etcd.close();
		}
	}

	static PrefillRegistration rank(int tpSize, int tpRank, int port) {
		return PrefillRegistration.prefill(ParallelLayout.tp(tpSize, tpRank), "10.0.0." + (tpRank + 1), port, 16);
	}

	static EtcdBootstrapClient client() {
		return EtcdBootstrapClient.create(etcd.endpoints()).leaseTtl(Duration.ofSeconds(2)).timeout(CALL_TIMEOUT)
				.prefix("t-" + UUID.randomUUID());
	}

	@Test
	void aClientWithTheCaAndACertificateRegistersAndResolves() {
		EtcdBootstrapClient client = client().tls(pki.ca(), pki.clientCert(), pki.clientKey());
		try {
			assertThat(client.isSecure()).isTrue();
			assertThat(client.toString()).contains("https://127.0.0.1:").contains("client certificate "
					+ pki.clientCert());
			StepVerifier.create(client.register(A, rank(1, 0, 17000))).expectComplete().verify(T);
			StepVerifier.create(client.rankEndpoint(A, 0, 0, 0)).expectNext(new HostPort("10.0.0.1", 17000))
					.expectComplete().verify(T);
			StepVerifier.create(client.health(A)).expectComplete().verify(T);
			StepVerifier.create(client.deregister(A, rank(1, 0, 17000))).expectComplete().verify(T);
		}
		finally {
			client.dispose();
		}
	}

	@Test
	void withoutAClientCertificateEtcdRefusesAndTheMessageSaysSo() {
		BootstrapException e = failure(client().tls(pki.ca()));
		assertThat(e.getMessage()).contains("on etcd " + https()).contains("TLS failed: etcd requires a client "
				+ "certificate (it runs with --client-cert-auth) and none was given");
		assertThat(e.kind()).isEqualTo(BootstrapException.Kind.OTHER);
		assertThat(e.isRetryable()).isFalse();
	}

	@Test
	void aClientCertificateOfAnotherCaIsRefused() {
		BootstrapException e = failure(client().tls(pki.ca(), pki.strangerCert(), pki.strangerKey()));
		assertThat(e.getMessage()).contains("on etcd " + https()).contains("TLS failed: etcd refused this "
				+ "client's certificate (is it signed by a CA in etcd's --trusted-ca-file");
		assertThat(e.isRetryable()).isFalse();
	}

	@Test
	void aServerCertificateOfAnotherCaIsNotTrusted() {
		BootstrapException e = failure(client().tls(pki.strangerCa(), pki.clientCert(), pki.clientKey()));
		assertThat(e.getMessage()).contains("on etcd " + https()).contains("TLS failed: etcd's server certificate "
				+ "is not signed by the CA certificate " + pki.strangerCa());
		assertThat(e.isRetryable()).isFalse();
	}

	@Test
	void plainHttpToATlsEtcdFailsAndTheMessageSaysSo() {
		// etcd closes a connection that does not start with a TLS handshake without a word, as a member going away
		// might: the call is tried again until its timeout, then names the likely cause.
		BootstrapException e = failure(client().timeout(Duration.ofSeconds(2)));
		assertThat(e.getMessage()).contains("on etcd [http://" + etcd.endpoints().get(0) + "]")
				.contains("if etcd serves https, this client must speak TLS: give etcd's CA certificate");
		assertThat(e.kind()).isEqualTo(BootstrapException.Kind.UNREACHABLE);
	}

	@Test
	void aMissingCertificateFileIsNamedWhenConfigured() {
		Path missing = dir.resolve("no-such-ca.pem");
		assertThat(Files.exists(missing)).isFalse();
		assertThatThrownBy(() -> client().tls(missing)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("etcd TLS: CA certificate " + missing + ": no such file");
	}

	private static String https() {
		return "[https://" + etcd.endpoints().get(0) + "]";
	}

	/**
	 * @return how the client's first call failed; a TLS failure is not retried, so it is reported long before the
	 * call's timeout
	 */
	private static BootstrapException failure(EtcdBootstrapClient client) {
		try {
			long start = System.nanoTime();
			Throwable[] error = new Throwable[1];
			StepVerifier.create(client.register(A, rank(1, 0, 17000))).expectErrorSatisfies(e -> error[0] = e)
					.verify(T);
			assertThat(error[0]).isInstanceOf(BootstrapException.class)
					.hasMessageStartingWith("register rank dp=0 tp=0 pp=0 of prefill-a:8998 at 10.0.0.1:17000 on etcd");
			BootstrapException failure = (BootstrapException) error[0];
			if (client.isSecure()) {
				assertThat(Duration.ofNanos(System.nanoTime() - start)).as("TLS failures are not retried")
						.isLessThan(CALL_TIMEOUT.dividedBy(2));
			}
			return failure;
		}
		finally {
			client.dispose();
		}
	}
}
