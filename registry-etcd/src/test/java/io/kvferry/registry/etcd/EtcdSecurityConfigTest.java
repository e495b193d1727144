package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.interfaces.ECPrivateKey;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import org.bouncycastle.asn1.sec.SECObjectIdentifiers;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.util.io.pem.PemObject;
import org.bouncycastle.util.io.pem.PemWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS material and credentials are checked when the client is configured, and each problem is named with its file:
 * a missing or unreadable file, one that holds no certificate or key, an expired certificate, a key of another
 * certificate. OpenSSL's RSA and EC key formats, which cfssl and openssl write, are read as PKCS#8 is.
 */
class EtcdSecurityConfigTest {

	@TempDir
	static Path dir;

	static EtcdTestPki pki;
	static final EtcdBootstrapClient CLIENT = EtcdBootstrapClient.create("etcd://127.0.0.1:2379");

	@BeforeAll
	static void makeCertificates() {
		pki = EtcdTestPki.create(dir);
	}

	@Test
	void goodFilesMakeASecureClient() {
		EtcdBootstrapClient tls = CLIENT.tls(pki.ca());
		assertThat(tls.isSecure()).isTrue();
		assertThat(tls.toString()).contains("[https://127.0.0.1:2379]").contains("CA " + pki.ca())
				.contains("no client certificate");
		EtcdBootstrapClient mutual = CLIENT.tls(pki.ca(), pki.clientCert(), pki.clientKey());
		assertThat(mutual.toString()).contains("client certificate " + pki.clientCert());
		assertThat(CLIENT.isSecure()).isFalse();
		assertThat(CLIENT.toString()).contains("[http://127.0.0.1:2379]");
		// Other settings keep the TLS and the user.
		EtcdBootstrapClient all = mutual.credentials("kvferry", "pw").prefix("p").timeout(Duration.ofSeconds(3))
				.leaseTtl(Duration.ofSeconds(4));
		assertThat(all.isSecure()).isTrue();
		assertThat(all.user()).isEqualTo("kvferry");
	}

	@Test
	void aMissingFileIsNamed() {
		Path missing = dir.resolve("missing-ca.pem");
		assertThatThrownBy(() -> CLIENT.tls(missing)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("etcd TLS: CA certificate " + missing + ": no such file");
		Path missingKey = dir.resolve("missing-key.pem");
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), pki.clientCert(), missingKey))
				.hasMessage("etcd TLS: client key " + missingKey + ": no such file");
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), dir.resolve("nope.pem"), pki.clientKey()))
				.hasMessageContaining("client certificate " + dir.resolve("nope.pem") + ": no such file");
	}

	@Test
	void aDirectoryOrAnUnreadableFileIsNamed() throws IOException {
		assertThatThrownBy(() -> CLIENT.tls(dir)).hasMessage("etcd TLS: CA certificate " + dir
				+ ": not a regular file");
		Path locked = Files.copy(pki.ca(), dir.resolve("locked-ca.pem"));
		assertThat(locked.toFile().setReadable(false, false)).isTrue();
		try {
			// Root reads every file whatever its mode: then only the other checks apply.
			if (!Files.isReadable(locked)) {
				assertThatThrownBy(() -> CLIENT.tls(locked)).hasMessage("etcd TLS: CA certificate " + locked
						+ ": not readable by this process (permissions)");
			}
		}
		finally {
			locked.toFile().setReadable(true, false);
		}
	}

	@Test
	void aFileWithoutACertificateIsNamed() throws IOException {
		Path garbage = Files.writeString(dir.resolve("garbage.pem"), "not a certificate\n");
		assertThatThrownBy(() -> CLIENT.tls(garbage)).hasMessageStartingWith("etcd TLS: CA certificate " + garbage
				+ ": ").hasMessageContaining("-----BEGIN CERTIFICATE-----");
		Path empty = Files.writeString(dir.resolve("empty.pem"), "");
		assertThatThrownBy(() -> CLIENT.tls(empty)).hasMessageStartingWith("etcd TLS: CA certificate " + empty
				+ ": ");
		// A key given as the certificate, and the certificate as the key.
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), pki.clientKey(), pki.clientKey()))
				.hasMessageStartingWith("etcd TLS: client certificate " + pki.clientKey() + ": ");
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), pki.clientCert(), pki.clientCert()))
				.hasMessage("etcd TLS: client key " + pki.clientCert() + ": a PEM 'CERTIFICATE' block (expected: "
						+ "PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)");
		Path noKey = Files.writeString(dir.resolve("no-key.pem"), "nothing here\n");
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), pki.clientCert(), noKey))
				.hasMessageContaining("client key " + noKey + ": no PEM private key in it");
	}

	@Test
	void aKeyOfAnotherCertificateIsRefused() {
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), pki.clientCert(), pki.strangerKey()))
				.hasMessage("etcd TLS: client key " + pki.strangerKey() + " is not the key of client certificate "
						+ pki.clientCert() + " (CN=kvferry)");
	}

	@Test
	void anExpiredCertificateIsRefused() throws Exception {
		X509Bundle expired = new CertificateBuilder().subject("CN=old").ecp256()
				.notBefore(Instant.now().minus(10, ChronoUnit.DAYS)).notAfter(Instant.now().minus(1, ChronoUnit.DAYS))
				.buildIssuedBy(pki.bundles()[0]);
		Path cert = Files.writeString(dir.resolve("expired.pem"), expired.getCertificatePEM());
		Path key = Files.writeString(dir.resolve("expired-key.pem"), expired.getPrivateKeyPEM());
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), cert, key))
				.hasMessageStartingWith("etcd TLS: client certificate " + cert + ": CN=old expired on ");
	}

	@Test
	void openSslKeyFormatsAreRead() throws Exception {
		X509Bundle rsa = new CertificateBuilder().subject("CN=kvferry-rsa").rsa2048().addExtendedKeyUsageClientAuth()
				.buildIssuedBy(pki.bundles()[0]);
		X509Bundle ec = new CertificateBuilder().subject("CN=kvferry-ec").ecp256().addExtendedKeyUsageClientAuth()
				.buildIssuedBy(pki.bundles()[0]);
		// RSA PRIVATE KEY (PKCS#1), as openssl genrsa -traditional and cfssl write it; BouncyCastle writes a lone RSA
		// key so.
		StringWriter pkcs1 = new StringWriter();
		try (JcaPEMWriter writer = new JcaPEMWriter(pkcs1)) {
			writer.writeObject(rsa.getKeyPair().getPrivate());
		}
		assertThat(pkcs1.toString()).startsWith("-----BEGIN RSA PRIVATE KEY-----");
		// EC PRIVATE KEY (SEC1) with its named curve, as openssl ecparam -genkey and cfssl write it.
		ECPrivateKey jdkEc = (ECPrivateKey) ec.getKeyPair().getPrivate();
		StringWriter sec1 = new StringWriter();
		try (PemWriter writer = new PemWriter(sec1)) {
			writer.writeObject(new PemObject("EC PRIVATE KEY", new org.bouncycastle.asn1.sec.ECPrivateKey(256,
					jdkEc.getS(), SECObjectIdentifiers.secp256r1).getEncoded()));
		}
		for (Object[] form : new Object[][] { { "rsa", rsa, pkcs1.toString() }, { "ec", ec, sec1.toString() },
				{ "rsa-pkcs8", rsa, rsa.getPrivateKeyPEM() } }) {
			X509Bundle bundle = (X509Bundle) form[1];
			Path cert = Files.writeString(dir.resolve(form[0] + ".pem"), bundle.getCertificatePEM());
			Path key = Files.writeString(dir.resolve(form[0] + "-key.pem"), (String) form[2], StandardCharsets.US_ASCII);
			assertThat(CLIENT.tls(pki.ca(), cert, key).isSecure()).as((String) form[0]).isTrue();
			// And a key of another certificate is still told apart.
			assertThatThrownBy(() -> CLIENT.tls(pki.ca(), pki.clientCert(), key)).as((String) form[0])
					.hasMessageContaining("is not the key of client certificate");
		}
		// Without its curve an EC PRIVATE KEY cannot be read: the message says how to convert it.
		StringWriter noCurve = new StringWriter();
		try (PemWriter writer = new PemWriter(noCurve)) {
			writer.writeObject(new PemObject("EC PRIVATE KEY", new org.bouncycastle.asn1.sec.ECPrivateKey(256,
					jdkEc.getS()).getEncoded()));
		}
		Path key = Files.writeString(dir.resolve("no-curve-key.pem"), noCurve.toString());
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), pki.clientCert(), key))
				.hasMessageContaining("an EC PRIVATE KEY without its named curve")
				.hasMessageContaining("openssl pkcs8 -topk8 -nocrypt -in " + key);
	}

	@Test
	void anEncryptedKeyIsRefusedSayingSo() throws IOException {
		Path encrypted = Files.writeString(dir.resolve("encrypted-key.pem"), "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
				+ "MIIBvTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQI\n-----END ENCRYPTED PRIVATE KEY-----\n");
		assertThatThrownBy(() -> CLIENT.tls(pki.ca(), pki.clientCert(), encrypted))
				.hasMessageStartingWith("etcd TLS: client key " + encrypted + ": encrypted");
	}

	@Test
	void aCallersContextMustBeAGrpcClientContext() throws Exception {
		assertThat(CLIENT.tls(GrpcSslContexts.forClient().trustManager(pki.ca().toFile()).build()).isSecure())
				.isTrue();
		assertThatThrownBy(() -> CLIENT.tls(SslContextBuilder.forClient().build()))
				.hasMessageContaining("does not offer h2 through ALPN");
		assertThatThrownBy(() -> CLIENT.tls(SslContextBuilder.forServer(pki.serverCert().toFile(),
				pki.serverKey().toFile()).build())).hasMessageContaining("a server context");
	}

	@Test
	void credentialsAreCheckedAndThePasswordIsNeverShown() {
		EtcdBootstrapClient client = CLIENT.credentials("kvferry", "hunter2-secret");
		assertThat(client.user()).isEqualTo("kvferry");
		assertThat(client.toString()).contains("user kvferry").doesNotContain("hunter2");
		assertThat(CLIENT.user()).isNull();
		assertThatThrownBy(() -> CLIENT.credentials("", "pw")).hasMessage("etcd user : empty (expected: an etcd "
				+ "user name)");
		assertThatThrownBy(() -> CLIENT.credentials("kvferry", "")).hasMessage("etcd password of user 'kvferry' : "
				+ "empty (expected: the user's password)");
	}
}
