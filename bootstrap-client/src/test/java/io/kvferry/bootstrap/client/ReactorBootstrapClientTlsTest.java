package io.kvferry.bootstrap.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.net.ssl.SSLException;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * {@link ReactorBootstrapClient} over TLS against the real bootstrap server secured with a self-signed certificate
 * made in the test: HTTPS round trips, bearer token over TLS, and TLS failures that fail at once instead of retrying.
 */
class ReactorBootstrapClientTlsTest {

	private static final Duration VERIFY = Duration.ofSeconds(20);
	private static final PrefillRegistration REGISTRATION = PrefillRegistration.prefill(ParallelLayout.SINGLE,
			"10.1.1.1", 17000, 32);

	private static X509Bundle certificate;

	private final List<Runnable> cleanups = new ArrayList<>();

	@BeforeAll
	static void certificate() {
		certificate = selfSigned("localhost", "127.0.0.1");
	}

	@AfterEach
	void cleanUp() {
		for (int i = cleanups.size() - 1; i >= 0; i--) {
			cleanups.get(i).run();
		}
	}

	private HostPort bind(BootstrapServer config) {
		DisposableBootstrapServer server = config.host("127.0.0.1").port(0).bindNow();
		cleanups.add(server::disposeNow);
		return server.address();
	}

	private HostPort bindSecure(BootstrapServer config, X509Bundle served) {
		return bind(config.secure(serverContext(served)));
	}

	private ReactorBootstrapClient track(ReactorBootstrapClient client) {
		cleanups.add(client::dispose);
		return client;
	}

	@Test
	void registersAndLooksUpOverHttpsWithATrustedCertificate() {
		HostPort bootstrap = bindSecure(BootstrapServer.create(), certificate);
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().secure(clientContext(certificate)));

		StepVerifier.create(client.health(bootstrap)
						.then(client.register(bootstrap, REGISTRATION))
						.then(client.parallelInfo(bootstrap)))
				.expectNext(new PrefillParallelInfo(1, 1, 1, 32))
				.expectComplete()
				.verify(VERIFY);
		StepVerifier.create(client.rankEndpoint(bootstrap, 0, 0, 0))
				.expectNext(new HostPort("10.1.1.1", 17000))
				.expectComplete()
				.verify(VERIFY);
	}

	@Test
	void sendsTheBearerTokenOverTls() {
		HostPort bootstrap = bindSecure(BootstrapServer.create().authToken("tls-token"), certificate);
		ReactorBootstrapClient anonymous = track(ReactorBootstrapClient.create().secure(clientContext(certificate))
				.registerAttempts(1));

		StepVerifier.create(anonymous.register(bootstrap, REGISTRATION))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = (BootstrapException) error;
					assertThat(failure.kind()).isEqualTo(Kind.UNAUTHORIZED);
					assertThat(failure.getMessage()).contains("PUT https://" + bootstrap + "/route: 401");
				})
				.verify(VERIFY);
		StepVerifier.create(anonymous.bearerToken("tls-token").register(bootstrap, REGISTRATION))
				.expectComplete()
				.verify(VERIFY);
	}

	@Test
	void anUntrustedCertificateFailsAtOnceWithoutRetrying() {
		HostPort bootstrap = bindSecure(BootstrapServer.create(), certificate);
		// The JDK's default trust store does not know a certificate made a moment ago.
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().secure().registerAttempts(5));

		StepVerifier.create(client.register(bootstrap, REGISTRATION))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = (BootstrapException) error;
					assertThat(failure.kind()).isEqualTo(Kind.OTHER);
					assertThat(failure.status()).isZero();
					assertThat(failure.isRetryable()).isFalse();
					assertThat(failure.getMessage()).contains("failed after 1 attempt", "PUT https://" + bootstrap
							+ "/route: TLS handshake with " + bootstrap + " failed (");
					assertThat(failure).hasRootCauseInstanceOf(java.security.cert.CertPathBuilderException.class);
				})
				.verify(VERIFY);
	}

	@Test
	void aCertificateForAnotherHostFailsHostnameVerification() {
		X509Bundle elsewhere = selfSigned("bootstrap.example.com");
		HostPort bootstrap = bindSecure(BootstrapServer.create(), elsewhere);
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().secure(clientContext(elsewhere)));

		StepVerifier.create(client.health(bootstrap))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = (BootstrapException) error;
					assertThat(failure.kind()).isEqualTo(Kind.OTHER);
					assertThat(failure.getMessage()).startsWith("GET https://" + bootstrap + "/health: TLS handshake "
							+ "with " + bootstrap + " failed (").contains("127.0.0.1");
				})
				.verify(VERIFY);
	}

	@Test
	void aSecuredClientFailsClearlyAgainstAPlainServer() {
		HostPort bootstrap = bind(BootstrapServer.create());
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().secure(clientContext(certificate)));

		StepVerifier.create(client.parallelInfo(bootstrap))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = (BootstrapException) error;
					assertThat(failure.kind()).isEqualTo(Kind.OTHER);
					assertThat(failure.getMessage()).startsWith("GET https://" + bootstrap + "/route?engine_rank=-1")
							.contains(": TLS handshake with " + bootstrap + " failed (");
					assertThat(failure).hasCauseInstanceOf(SSLException.class);
				})
				.verify(VERIFY);
	}

	@Test
	void aPlainClientIsToldThatTheServerMayRequireTls() {
		HostPort bootstrap = bindSecure(BootstrapServer.create(), certificate);
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().timeout(Duration.ofSeconds(3)));

		StepVerifier.create(client.health(bootstrap))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = (BootstrapException) error;
					// The server's TLS layer closes a connection whose first bytes are no TLS record, without a word.
					assertThat(failure.kind()).isEqualTo(Kind.UNREACHABLE);
					assertThat(failure.getMessage()).startsWith("GET http://" + bootstrap + "/health: connection lost (")
							.endsWith("(a server that requires TLS closes plain HTTP connections this way: if it serves "
									+ "https, call it with TLS)");
				})
				.verify(VERIFY);
	}

	@Test
	void secureReturnsANewClientAndRefusesAServerContext() {
		ReactorBootstrapClient plain = ReactorBootstrapClient.create();
		ReactorBootstrapClient secured = plain.secure(clientContext(certificate));
		assertThat(plain.isSecure()).isFalse();
		assertThat(secured.isSecure()).isTrue();
		assertThat(secured).isNotSameAs(plain);
		assertThat(plain.secure().isSecure()).isTrue();
		// Later setters keep TLS.
		assertThat(secured.timeout(Duration.ofSeconds(1)).bearerToken("t").registerAttempts(2).isSecure()).isTrue();
		assertThatIllegalArgumentException().isThrownBy(() -> plain.secure(serverContext(certificate)))
				.withMessage("sslContext : a server context (expected: a client context from "
						+ "SslContextBuilder.forClient())");
	}

	private static X509Bundle selfSigned(String... names) {
		CertificateBuilder builder = new CertificateBuilder()
				.subject("CN=kvferry-bootstrap-test")
				.ecp256()
				// netty-pkitesting only self-signs certificate authorities; the JDK accepts one as a server's own.
				.setIsCertificateAuthority(true);
		for (String name : names) {
			if (Character.isDigit(name.charAt(0))) {
				builder.addSanIpAddress(name);
			}
			else {
				builder.addSanDnsName(name);
			}
		}
		try {
			return builder.buildSelfSigned();
		}
		catch (Exception e) {
			throw new IllegalStateException("cannot make a test certificate", e);
		}
	}

	private static SslContext serverContext(X509Bundle bundle) {
		try {
			return SslContextBuilder.forServer(bundle.getKeyPair().getPrivate(), bundle.getCertificatePath()).build();
		}
		catch (SSLException e) {
			throw new IllegalStateException(e);
		}
	}

	private static SslContext clientContext(X509Bundle trusted) {
		try {
			return SslContextBuilder.forClient().trustManager(trusted.getCertificate()).build();
		}
		catch (SSLException e) {
			throw new IllegalStateException(e);
		}
	}
}
