package io.kvferry.transport.netty;

import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;

/**
 * TLS material made in the test: self-signed certificates for {@code 127.0.0.1} and {@code localhost} (EC P-256),
 * generated once per JVM, and Netty contexts built from them with the JDK provider.
 */
public final class TestTls {

	private static final X509Bundle NODE = selfSigned("CN=kvferry-test-node");
	private static final X509Bundle STRANGER = selfSigned("CN=kvferry-test-stranger");

	private TestTls() {
	}

	private static X509Bundle selfSigned(String subject) {
		try {
			return new CertificateBuilder()
					.subject(subject)
					.setIsCertificateAuthority(true)
					.addSanIpAddress("127.0.0.1")
					.addSanDnsName("localhost")
					.ecp256()
					.buildSelfSigned();
		}
		catch (Exception e) {
			throw new IllegalStateException("cannot make a test certificate", e);
		}
	}

	/** @return a server context with the node certificate */
	public static SslContext server() {
		return server(NODE, ClientAuth.NONE);
	}

	/** @return a server context with the node certificate that requires a client certificate it trusts */
	public static SslContext serverRequiringClientCertificates() {
		return server(NODE, ClientAuth.REQUIRE);
	}

	/** @return a client context trusting the node certificate and presenting none */
	public static SslContext client() {
		return client(NODE, null);
	}

	/** @return a client context trusting the node certificate and presenting it as its own */
	public static SslContext clientWithCertificate() {
		return client(NODE, NODE);
	}

	/** @return a client context that trusts only another certificate */
	public static SslContext clientTrustingAStranger() {
		return client(STRANGER, null);
	}

	private static SslContext server(X509Bundle identity, ClientAuth clientAuth) {
		try {
			return SslContextBuilder.forServer(identity.toKeyManagerFactory())
					.trustManager(NODE.toTrustManagerFactory())
					.clientAuth(clientAuth)
					.build();
		}
		catch (Exception e) {
			throw new IllegalStateException("cannot build a server context", e);
		}
	}

	private static SslContext client(X509Bundle trusted, X509Bundle identity) {
		try {
			SslContextBuilder builder = SslContextBuilder.forClient().trustManager(trusted.toTrustManagerFactory());
			if (identity != null) {
				builder.keyManager(identity.toKeyManagerFactory());
			}
			return builder.build();
		}
		catch (Exception e) {
			throw new IllegalStateException("cannot build a client context", e);
		}
	}
}
