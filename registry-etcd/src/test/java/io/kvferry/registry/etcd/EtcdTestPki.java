package io.kvferry.registry.etcd;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import javax.net.ssl.SSLContext;

import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;

/**
 * Certificates for a TLS etcd, made in the test with netty-pkitesting (no openssl needed) and written as PEM files as
 * an operator would have them: a CA, etcd's server certificate signed by it (SAN IP 127.0.0.1 and DNS localhost,
 * usable for server and client authentication, as etcd also dials itself with it), a client certificate signed by
 * it, and a stranger CA with a client certificate of its own, which etcd does not trust.
 *
 * @param dir where the files are
 * @param ca the CA certificate (PEM), what etcd gets as {@code --trusted-ca-file} and clients as their CA
 * @param serverCert etcd's certificate (PEM, {@code --cert-file})
 * @param serverKey its key (PKCS#8 PEM, {@code --key-file})
 * @param clientCert a client certificate signed by the CA (PEM)
 * @param clientKey its key (PKCS#8 PEM)
 * @param strangerCa another CA (PEM), which did not sign etcd's certificate
 * @param strangerCert a client certificate signed by the stranger CA (PEM)
 * @param strangerKey its key (PKCS#8 PEM)
 * @param bundles the certificates and keys themselves: ca, server, client, stranger CA, stranger client
 */
public record EtcdTestPki(Path dir, Path ca, Path serverCert, Path serverKey, Path clientCert, Path clientKey,
		Path strangerCa, Path strangerCert, Path strangerKey, X509Bundle[] bundles) {

	/**
	 * Makes the certificates and writes them into {@code dir}.
	 *
	 * @param dir an existing directory
	 * @return the files
	 */
	public static EtcdTestPki create(Path dir) {
		try {
			X509Bundle ca = new CertificateBuilder().subject("CN=kvferry-test-etcd-ca").setIsCertificateAuthority(true)
					.ecp256().buildSelfSigned();
			X509Bundle server = new CertificateBuilder().subject("CN=etcd").addSanIpAddress("127.0.0.1")
					.addSanDnsName("localhost").addExtendedKeyUsageServerAuth().addExtendedKeyUsageClientAuth()
					.ecp256().buildIssuedBy(ca);
			X509Bundle client = new CertificateBuilder().subject("CN=kvferry").addExtendedKeyUsageClientAuth()
					.ecp256().buildIssuedBy(ca);
			X509Bundle strangerCa = new CertificateBuilder().subject("CN=kvferry-test-stranger-ca")
					.setIsCertificateAuthority(true).ecp256().buildSelfSigned();
			X509Bundle stranger = new CertificateBuilder().subject("CN=kvferry").addExtendedKeyUsageClientAuth()
					.ecp256().buildIssuedBy(strangerCa);
			return new EtcdTestPki(dir, write(dir, "ca.pem", ca.getCertificatePEM()),
					write(dir, "etcd.pem", server.getCertificatePEM()), write(dir, "etcd-key.pem",
							server.getPrivateKeyPEM()),
					write(dir, "client.pem", client.getCertificatePEM()), write(dir, "client-key.pem",
							client.getPrivateKeyPEM()),
					write(dir, "stranger-ca.pem", strangerCa.getCertificatePEM()),
					write(dir, "stranger.pem", stranger.getCertificatePEM()),
					write(dir, "stranger-key.pem", stranger.getPrivateKeyPEM()),
					new X509Bundle[] { ca, server, client, strangerCa, stranger });
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
		catch (Exception e) {
			throw new IllegalStateException("cannot make the test certificates", e);
		}
	}

	/** @return a JDK context that trusts the CA and presents the client certificate, for etcd's HTTP endpoints */
	public SSLContext jdkClientContext() {
		try {
			SSLContext context = SSLContext.getInstance("TLS");
			context.init(bundles[2].toKeyManagerFactory().getKeyManagers(),
					bundles[0].toTrustManagerFactory().getTrustManagers(), null);
			return context;
		}
		catch (Exception e) {
			throw new IllegalStateException(e);
		}
	}

	private static Path write(Path dir, String name, String pem) throws IOException {
		return Files.writeString(dir.resolve(name), pem, StandardCharsets.US_ASCII);
	}
}
