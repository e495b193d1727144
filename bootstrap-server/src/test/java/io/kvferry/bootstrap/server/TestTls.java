package io.kvferry.bootstrap.server;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.openssl.PKCS8Generator;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.openssl.jcajce.JceOpenSSLPKCS8EncryptorBuilder;
import org.bouncycastle.operator.OperatorCreationException;

/** Self-signed certificates made in the test, with netty-pkitesting, and the TLS contexts built from them. */
final class TestTls {

	private TestTls() {
	}

	/**
	 * @param names DNS names and IP literals the certificate is valid for
	 * @return a new self-signed EC P-256 server certificate and its key
	 */
	static X509Bundle selfSigned(String... names) {
		CertificateBuilder builder = new CertificateBuilder()
				.subject("CN=kvferry-test")
				.ecp256()
				// netty-pkitesting only self-signs certificate authorities; the JDK accepts one as a server's own.
				.setIsCertificateAuthority(true)
				.addExtendedKeyUsageServerAuth();
		for (String name : names) {
			if (Character.isDigit(name.charAt(0)) || name.indexOf(':') >= 0) {
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
			throw new IllegalStateException("cannot build a test certificate", e);
		}
	}

	/** @return a Netty server context serving the bundle's certificate */
	static SslContext serverContext(X509Bundle bundle) {
		try {
			return SslContextBuilder.forServer(bundle.getKeyPair().getPrivate(), bundle.getCertificatePath()).build();
		}
		catch (SSLException e) {
			throw new IllegalStateException(e);
		}
	}

	/** @return a Netty client context trusting only the bundle's certificate */
	static SslContext clientContext(X509Bundle bundle) {
		try {
			return SslContextBuilder.forClient().trustManager(bundle.getCertificate()).build();
		}
		catch (SSLException e) {
			throw new IllegalStateException(e);
		}
	}

	/** @return a JDK context trusting only the bundle's certificate, for {@link java.net.http.HttpClient} */
	static SSLContext jdkClientContext(X509Bundle bundle) {
		try {
			SSLContext context = SSLContext.getInstance("TLS");
			context.init(null, bundle.toTrustManagerFactory().getTrustManagers(), null);
			return context;
		}
		catch (GeneralSecurityException e) {
			throw new IllegalStateException(e);
		}
	}

	/**
	 * Encrypts the bundle's private key as {@code openssl pkcs8 -topk8 -v2 aes-256-cbc} does (PBES2, AES-256-CBC), with
	 * BouncyCastle (which netty-pkitesting brings), and writes it as an {@code ENCRYPTED PRIVATE KEY} PEM file.
	 *
	 * @return the key file
	 */
	static Path writeEncryptedKeyPem(X509Bundle bundle, String password, Path dir) {
		try {
			JceOpenSSLPKCS8EncryptorBuilder encryptor = new JceOpenSSLPKCS8EncryptorBuilder(
					PKCS8Generator.AES_256_CBC);
			encryptor.setPassword(password.toCharArray());
			// A provider instance for this call only: nothing is registered JVM-wide.
			encryptor.setProvider(new BouncyCastleProvider());
			StringWriter pem = new StringWriter();
			try (JcaPEMWriter writer = new JcaPEMWriter(pem)) {
				writer.writeObject(new JcaPKCS8Generator(bundle.getKeyPair().getPrivate(), encryptor.build()));
			}
			return Files.writeString(dir.resolve("encrypted-key.pem"), pem.toString(), StandardCharsets.US_ASCII);
		}
		catch (OperatorCreationException e) {
			throw new IllegalStateException(e);
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}

	/**
	 * Writes the certificate chain and the PKCS#8 private key as PEM files, as an operator would hand them to the
	 * standalone server.
	 *
	 * @return {certificate file, key file}
	 */
	static Path[] writePem(X509Bundle bundle, Path dir) {
		try {
			Path cert = Files.writeString(dir.resolve("cert.pem"), bundle.getCertificatePathPEM(),
					StandardCharsets.US_ASCII);
			Path key = Files.writeString(dir.resolve("key.pem"), bundle.getPrivateKeyPEM(), StandardCharsets.US_ASCII);
			return new Path[] { cert, key };
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}
}
