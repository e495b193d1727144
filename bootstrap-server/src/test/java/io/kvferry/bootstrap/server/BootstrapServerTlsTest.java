package io.kvferry.bootstrap.server;

import java.io.UncheckedIOException;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

import javax.net.ssl.SSLHandshakeException;

import io.kvferry.bootstrap.server.BootstrapServerMain.Configured;
import io.kvferry.bootstrap.server.RawHttp.Answer;
import io.kvferry.bootstrap.server.RawHttp.Mode;
import io.netty.pkitesting.X509Bundle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The optional TLS: HTTPS with a self-signed certificate made in the test, refused to clients that do not trust it,
 * never answered in plain text, bounded handshakes; and the standalone server reading PEM files.
 */
class BootstrapServerTlsTest {

	private static final String REGISTRATION = TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 5000);
	private static final String LOOKUP = "/route?engine_rank=0&target_dp_group=0&target_pp_rank=0";

	private static X509Bundle certificate;

	private DisposableBootstrapServer server;

	@BeforeAll
	static void certificate() {
		certificate = TestTls.selfSigned("localhost", "127.0.0.1");
	}

	@AfterEach
	void dispose() {
		if (server != null) {
			server.disposeNow();
		}
	}

	private DisposableBootstrapServer bindSecure(BootstrapServer config) {
		server = config.host("127.0.0.1").port(0).secure(TestTls.serverContext(certificate)).bindNow();
		return server;
	}

	@Test
	void servesRegistrationAndLookupsOverHttps() {
		bindSecure(BootstrapServer.create());
		assertThat(server.isSecure()).isTrue();
		assertThat(server.baseUrl()).isEqualTo("https://127.0.0.1:" + server.address().port());
		TestHttp https = new TestHttp(server.baseUrl(), TestTls.jdkClientContext(certificate));

		assertThat(https.get("/health").body()).isEqualTo("OK");
		assertThat(https.put("/route", REGISTRATION).statusCode()).isEqualTo(200);
		HttpResponse<String> lookup = https.get(LOOKUP);
		assertThat(lookup.statusCode()).isEqualTo(200);
		assertThat(lookup.body()).isEqualTo("{\"rank_ip\": \"10.0.0.1\", \"rank_port\": 5000}");
		assertThat(https.get("/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1").body())
				.isEqualTo("{\"prefill_attn_tp_size\": 1, \"prefill_dp_size\": 1, \"prefill_pp_size\": 1, "
						+ "\"prefill_page_size\": 16}");
		assertThat(https.put("/route", "{").statusCode()).isEqualTo(400);
	}

	@Test
	void combinesWithTheBearerToken() {
		bindSecure(BootstrapServer.create().authToken("tls-and-token"));
		TestHttp https = new TestHttp(server.baseUrl(), TestTls.jdkClientContext(certificate));
		assertThat(https.put("/route", REGISTRATION).statusCode()).isEqualTo(401);
		assertThat(https.send("PUT", "/route", BodyPublishers.ofString(REGISTRATION),
				"Authorization", "Bearer tls-and-token").statusCode()).isEqualTo(200);
	}

	@Test
	void refusesClientsThatDoNotTrustItsCertificateAndKeepsServingOthers() {
		bindSecure(BootstrapServer.create());
		TestHttp untrusting = new TestHttp(server.baseUrl(), null);
		assertThatThrownBy(() -> untrusting.get("/health"))
				.isInstanceOf(UncheckedIOException.class)
				.hasCauseInstanceOf(SSLHandshakeException.class)
				.hasMessageContaining("PKIX path building failed");
		TestHttp trusting = new TestHttp(server.baseUrl(), TestTls.jdkClientContext(certificate));
		assertThat(trusting.get("/health").statusCode()).isEqualTo(200);
	}

	@Test
	void aCertificateForAnotherHostFailsHostnameVerification() {
		X509Bundle elsewhere = TestTls.selfSigned("bootstrap.example.com");
		server = BootstrapServer.create().host("127.0.0.1").port(0).secure(TestTls.serverContext(elsewhere))
				.bindNow();
		TestHttp https = new TestHttp(server.baseUrl(), TestTls.jdkClientContext(elsewhere));
		assertThatThrownBy(() -> https.get("/health"))
				.hasCauseInstanceOf(SSLHandshakeException.class)
				.hasMessageContaining("No subject alternative names matching IP address 127.0.0.1");
	}

	@Test
	void neverAnswersPlainHttpOnItsTlsPort() {
		bindSecure(BootstrapServer.create());
		Answer answer = RawHttp.exchange(server.address().port(), ("PUT /route HTTP/1.1\r\nHost: x\r\nContent-Length: "
				+ REGISTRATION.length() + "\r\n\r\n" + REGISTRATION).getBytes(StandardCharsets.US_ASCII), Mode.WHOLE);
		assertThat(answer.hung()).isFalse();
		assertThat(answer.status()).isZero();
		assertThat(new String(answer.bytes(), StandardCharsets.ISO_8859_1)).doesNotContain("HTTP/1.1");
		assertThat(server.registeredCount()).isZero();
	}

	@Test
	void closesAClientThatNeverStartsTheHandshake() {
		bindSecure(BootstrapServer.create().idleTimeout(Duration.ofMinutes(5)).requestTimeout(Duration.ofMillis(300)));
		Answer answer = RawHttp.exchange(server.address().port(), new byte[0], Mode.SILENT);
		assertThat(answer.hung()).as("closed by the handshake timeout").isFalse();
		assertThat(answer.status()).isZero();
	}

	@Test
	void staysPlainByDefaultAndRefusesAClientContext() {
		assertThat(BootstrapServer.create().isSecure()).isFalse();
		server = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		assertThat(server.isSecure()).isFalse();
		assertThat(server.baseUrl()).isEqualTo(server.address().httpUrl());

		assertThatThrownBy(() -> BootstrapServer.create().secure(TestTls.clientContext(certificate)))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageStartingWith("sslContext : a client context (expected: a server context");
		assertThatThrownBy(() -> BootstrapServer.create().secure(null)).isInstanceOf(NullPointerException.class)
				.hasMessage("sslContext");
		BootstrapServer secure = BootstrapServer.create().secure(TestTls.serverContext(certificate));
		assertThat(secure.isSecure()).isTrue();
		assertThat(secure.toString()).startsWith("BootstrapServer{https://0.0.0.0:8998");
		assertThat(BootstrapServer.create().toString()).startsWith("BootstrapServer{http://0.0.0.0:8998");
	}

	@Test
	void theStandaloneServerReadsAnEncryptedKeyWithItsPassword(@TempDir Path dir) {
		Path cert = TestTls.writePem(certificate, dir)[0];
		Path key = TestTls.writeEncryptedKeyPem(certificate, "pass phrase", dir);
		Configured configured = BootstrapServerMain.configuration("--host", "127.0.0.1", "--port", "0",
				"--tls-cert", cert.toString(), "--tls-key", key.toString(), "--tls-key-password", "pass phrase",
				"--no-metrics");
		try {
			server = configured.server().bindNow();
			TestHttp https = new TestHttp(server.baseUrl(), TestTls.jdkClientContext(certificate));
			assertThat(https.get("/health").body()).isEqualTo("OK");
		}
		finally {
			configured.closeMetrics().run();
		}
		assertThatThrownBy(() -> BootstrapServerMain.configuration("--tls-cert", cert.toString(), "--tls-key",
				key.toString(), "--tls-key-password", "wrong"))
				.hasMessageContaining("(expected: a PEM certificate chain and its PKCS#8 PEM private key)");
	}

	@Test
	void theStandaloneServerServesHttpsFromPemFiles(@TempDir Path dir) {
		Path[] pem = TestTls.writePem(certificate, dir);
		Configured configured = BootstrapServerMain.configuration("--host", "127.0.0.1", "--port", "0",
				"--tls-cert", pem[0].toString(), "--tls-key", pem[1].toString());
		try {
			assertThat(configured.server().isSecure()).isTrue();
			server = configured.server().bindNow();
			TestHttp https = new TestHttp(server.baseUrl(), TestTls.jdkClientContext(certificate));
			assertThat(https.get("/health").body()).isEqualTo("OK");
			assertThat(https.get("/metrics").body()).contains("kvferry_bootstrap_requests_total");
		}
		finally {
			configured.closeMetrics().run();
		}
	}
}
