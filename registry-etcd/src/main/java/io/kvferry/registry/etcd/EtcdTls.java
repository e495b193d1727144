package io.kvferry.registry.etcd;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Date;
import java.util.List;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.SSLException;

import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.jspecify.annotations.Nullable;

/**
 * How the etcd connection is secured: a gRPC client TLS context, read from PEM files (the CA that signed etcd's
 * certificate, and optionally a client certificate and its key for mutual TLS) or given ready-made, and what it was
 * made of, for failure messages. Files are read once, when the configuration is made, so a missing, unreadable or
 * malformed file fails there, naming the file and what is wrong with it.
 */
final class EtcdTls {

	private static final Pattern PEM = Pattern.compile(
			"-----BEGIN ([A-Z0-9 ]+)-----\\s*([A-Za-z0-9+/=\\s]*?)-----END \\1-----");

	/** rsaEncryption and id-ecPublicKey, DER-encoded with their tags. */
	private static final byte[] RSA_ENCRYPTION = { 0x06, 0x09, 0x2a, (byte) 0x86, 0x48, (byte) 0x86, (byte) 0xf7, 0x0d,
			0x01, 0x01, 0x01 };
	private static final byte[] EC_PUBLIC_KEY = { 0x06, 0x07, 0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x02, 0x01 };
	private static final byte[] DER_NULL = { 0x05, 0x00 };

	private final SslContext context;
	private final @Nullable Path ca;
	private final @Nullable Path clientCertificate;
	private final boolean presentsCertificate;

	private EtcdTls(SslContext context, @Nullable Path ca, @Nullable Path clientCertificate,
			boolean presentsCertificate) {
		this.context = context;
		this.ca = ca;
		this.clientCertificate = clientCertificate;
		this.presentsCertificate = presentsCertificate;
	}

	/**
	 * @param ca PEM file of the CA certificate(s) that signed etcd's server certificate (etcd's
	 * {@code --trusted-ca-file} usually)
	 * @param certificate PEM file of this client's certificate (leaf first, then intermediates), or null for no
	 * client certificate
	 * @param key PEM file of its private key (PKCS#8 {@code PRIVATE KEY}, or OpenSSL's {@code RSA PRIVATE KEY} /
	 * {@code EC PRIVATE KEY}), unencrypted; null exactly when {@code certificate} is
	 * @return the context
	 * @throws IllegalArgumentException naming the file that is missing, unreadable, malformed, expired or, for the
	 * key, not the certificate's
	 */
	static EtcdTls fromFiles(Path ca, @Nullable Path certificate, @Nullable Path key) {
		Objects.requireNonNull(ca, "caCertificate");
		if ((certificate == null) != (key == null)) {
			throw new IllegalArgumentException("etcd TLS: a client certificate and its key go together (got "
					+ (certificate == null ? "a key " + key + " without a certificate"
							: "a certificate " + certificate + " without a key") + ")");
		}
		List<X509Certificate> trusted = certificates("CA certificate", ca);
		SslContextBuilder builder = GrpcSslContexts.forClient().trustManager(trusted);
		if (certificate != null) {
			List<X509Certificate> chain = certificates("client certificate", certificate);
			PrivateKey privateKey = privateKey(key);
			checkPair(chain.get(0), privateKey, certificate, key);
			builder.keyManager(privateKey, chain);
		}
		try {
			return new EtcdTls(builder.build(), ca, certificate, certificate != null);
		}
		catch (SSLException | RuntimeException e) {
			throw new IllegalArgumentException("etcd TLS: cannot make a TLS context from CA certificate " + ca
					+ (certificate == null ? "" : ", client certificate " + certificate + " and key " + key) + ": "
					+ EtcdErrors.describe(e), e);
		}
	}

	/**
	 * @param context a client context for gRPC (HTTP/2 offered through ALPN), as
	 * {@code GrpcSslContexts.forClient()...build()} makes
	 * @return the context, described as the caller's own
	 * @throws IllegalArgumentException for a server context or one that does not offer {@code h2}
	 */
	static EtcdTls of(SslContext context) {
		Objects.requireNonNull(context, "sslContext");
		if (!context.isClient()) {
			throw new IllegalArgumentException("sslContext : a server context (expected: a client context, as "
					+ "GrpcSslContexts.forClient()...build() makes)");
		}
		if (context.applicationProtocolNegotiator() == null
				|| !context.applicationProtocolNegotiator().protocols().contains(ApplicationProtocolNames.HTTP_2)) {
			throw new IllegalArgumentException("sslContext : does not offer h2 through ALPN, which etcd's gRPC needs "
					+ "(expected: a context from GrpcSslContexts.forClient()...build())");
		}
		return new EtcdTls(context, null, null, false);
	}

	SslContext context() {
		return context;
	}

	/** @return whether a client certificate is configured; false for a caller's context, where it is not known */
	boolean presentsCertificate() {
		return presentsCertificate;
	}

	/** @return whether the context is the caller's own, whose content is not known */
	boolean isCallersContext() {
		return ca == null;
	}

	/** @return the CA file, for messages: "the CA in ..." or "the caller's TLS context" */
	String trustSource() {
		return ca == null ? "the TLS context given" : "the CA certificate " + ca;
	}

	@Override
	public String toString() {
		if (ca == null) {
			return "TLS (the caller's context)";
		}
		return "TLS (CA " + ca + (clientCertificate == null ? ", no client certificate"
				: ", client certificate " + clientCertificate) + ")";
	}

	// ---------------------------------------------------------------------------------------------------------------

	private static byte[] read(String what, Path file) {
		if (!Files.exists(file)) {
			throw new IllegalArgumentException("etcd TLS: " + what + " " + file + ": no such file");
		}
		if (!Files.isRegularFile(file)) {
			throw new IllegalArgumentException("etcd TLS: " + what + " " + file + ": not a regular file");
		}
		if (!Files.isReadable(file)) {
			throw new IllegalArgumentException("etcd TLS: " + what + " " + file + ": not readable by this process "
					+ "(permissions)");
		}
		try {
			return Files.readAllBytes(file);
		}
		catch (IOException e) {
			throw new IllegalArgumentException("etcd TLS: " + what + " " + file + ": cannot be read ("
					+ EtcdErrors.describe(e) + ")", e);
		}
	}

	private static List<X509Certificate> certificates(String what, Path file) {
		byte[] pem = read(what, file);
		Collection<? extends Certificate> parsed;
		try {
			parsed = CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem));
		}
		catch (CertificateException e) {
			throw new IllegalArgumentException("etcd TLS: " + what + " " + file + ": not a PEM certificate ("
					+ EtcdErrors.describe(e) + "; expected: -----BEGIN CERTIFICATE-----)", e);
		}
		List<X509Certificate> certificates = new ArrayList<>();
		for (Certificate c : parsed) {
			certificates.add((X509Certificate) c);
		}
		if (certificates.isEmpty()) {
			throw new IllegalArgumentException("etcd TLS: " + what + " " + file + ": holds no certificate (expected: "
					+ "PEM, -----BEGIN CERTIFICATE-----)");
		}
		Date now = new Date();
		for (X509Certificate c : certificates) {
			if (now.after(c.getNotAfter())) {
				throw new IllegalArgumentException("etcd TLS: " + what + " " + file + ": " + c.getSubjectX500Principal()
						+ " expired on " + c.getNotAfter().toInstant());
			}
			if (now.before(c.getNotBefore())) {
				throw new IllegalArgumentException("etcd TLS: " + what + " " + file + ": " + c.getSubjectX500Principal()
						+ " is not valid before " + c.getNotBefore().toInstant() + " (is this machine's clock right?)");
			}
		}
		return certificates;
	}

	/** Reads an unencrypted PKCS#8, PKCS#1 (RSA) or SEC1 (EC) private key from PEM. */
	private static PrivateKey privateKey(Path file) {
		String text = new String(read("client key", file), StandardCharsets.US_ASCII);
		Matcher m = PEM.matcher(text);
		while (m.find()) {
			String type = m.group(1);
			if (type.equals("EC PARAMETERS")) {
				continue;
			}
			byte[] der;
			try {
				der = Base64.getMimeDecoder().decode(m.group(2));
			}
			catch (IllegalArgumentException e) {
				throw new IllegalArgumentException("etcd TLS: client key " + file + ": bad base64 in its PEM block ("
						+ e.getMessage() + ")", e);
			}
			switch (type) {
				case "PRIVATE KEY":
					return pkcs8(file, der, "RSA", "EC", "Ed25519", "Ed448", "RSASSA-PSS");
				case "RSA PRIVATE KEY":
					return pkcs8(file, wrap(algorithm(RSA_ENCRYPTION, DER_NULL), der), "RSA");
				case "EC PRIVATE KEY":
					return pkcs8(file, wrap(algorithm(EC_PUBLIC_KEY, curve(file, der)), der), "EC");
				case "ENCRYPTED PRIVATE KEY":
					throw new IllegalArgumentException("etcd TLS: client key " + file + ": encrypted (expected: an "
							+ "unencrypted key, as etcd's own; decrypt it to a file only this user reads: openssl "
							+ "pkcs8 -in " + file + " -out client-key.pem)");
				default:
					throw new IllegalArgumentException("etcd TLS: client key " + file + ": a PEM '" + type
							+ "' block (expected: PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)");
			}
		}
		throw new IllegalArgumentException("etcd TLS: client key " + file + ": no PEM private key in it (expected: "
				+ "-----BEGIN PRIVATE KEY-----)");
	}

	private static PrivateKey pkcs8(Path file, byte[] der, String... algorithms) {
		GeneralSecurityException last = null;
		for (String algorithm : algorithms) {
			try {
				return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
			}
			catch (GeneralSecurityException e) {
				last = e;
			}
		}
		throw new IllegalArgumentException("etcd TLS: client key " + file + ": not a private key this JVM reads ("
				+ (last == null ? "?" : EtcdErrors.describe(last)) + ")", last);
	}

	/** The named curve a SEC1 {@code ECPrivateKey} carries in its {@code [0] parameters}. */
	private static byte[] curve(Path file, byte[] sec1) {
		// ECPrivateKey ::= SEQUENCE { version INTEGER, privateKey OCTET STRING, [0] parameters OPTIONAL, [1] ... }
		int[] seq = header(sec1, 0, 0x30);
		if (seq != null) {
			int at = seq[0];
			int end = seq[0] + seq[1];
			while (at < end) {
				int[] field = header(sec1, at, -1);
				if (field == null) {
					break;
				}
				if ((sec1[at] & 0xff) == 0xa0) {
					int[] oid = header(sec1, field[0], 0x06);
					if (oid != null) {
						byte[] out = new byte[oid[0] + oid[1] - field[0]];
						System.arraycopy(sec1, field[0], out, 0, out.length);
						return out;
					}
				}
				at = field[0] + field[1];
			}
		}
		throw new IllegalArgumentException("etcd TLS: client key " + file + ": an EC PRIVATE KEY without its named "
				+ "curve (expected: PKCS#8; convert with: openssl pkcs8 -topk8 -nocrypt -in " + file
				+ " -out client-key.pem)");
	}

	/** @return {offset of the contents, their length} of the DER element at {@code at}, or null if malformed */
	private static int @Nullable [] header(byte[] der, int at, int tag) {
		if (at + 2 > der.length || (tag >= 0 && (der[at] & 0xff) != tag)) {
			return null;
		}
		int length = der[at + 1] & 0xff;
		int start = at + 2;
		if (length >= 0x80) {
			int bytes = length & 0x7f;
			if (bytes == 0 || bytes > 3 || start + bytes > der.length) {
				return null;
			}
			length = 0;
			for (int i = 0; i < bytes; i++) {
				length = (length << 8) | (der[start + i] & 0xff);
			}
			start += bytes;
		}
		return start + length <= der.length ? new int[] { start, length } : null;
	}

	private static byte[] algorithm(byte[] oid, byte[] parameters) {
		return element(0x30, oid, parameters);
	}

	/** PrivateKeyInfo ::= SEQUENCE { version 0, AlgorithmIdentifier, privateKey OCTET STRING } */
	private static byte[] wrap(byte[] algorithm, byte[] key) {
		return element(0x30, new byte[] { 0x02, 0x01, 0x00 }, algorithm, element(0x04, key));
	}

	private static byte[] element(int tag, byte[]... parts) {
		ByteArrayOutputStream body = new ByteArrayOutputStream();
		for (byte[] part : parts) {
			body.writeBytes(part);
		}
		ByteArrayOutputStream out = new ByteArrayOutputStream();
		out.write(tag);
		int n = body.size();
		if (n < 0x80) {
			out.write(n);
		}
		else if (n < 0x100) {
			out.write(0x81);
			out.write(n);
		}
		else if (n < 0x10000) {
			out.write(0x82);
			out.write(n >> 8);
			out.write(n);
		}
		else {
			out.write(0x83);
			out.write(n >> 16);
			out.write(n >> 8);
			out.write(n);
		}
		out.writeBytes(body.toByteArray());
		return out.toByteArray();
	}

	/** Signs with the key and verifies with the certificate, so that a key of another certificate fails here. */
	private static void checkPair(X509Certificate certificate, PrivateKey key, Path certificateFile, Path keyFile) {
		String algorithm = switch (key.getAlgorithm()) {
			case "RSA" -> "SHA256withRSA";
			case "EC" -> "SHA256withECDSA";
			case "Ed25519", "Ed448", "EdDSA" -> key.getAlgorithm();
			default -> null;
		};
		if (algorithm == null) {
			return;
		}
		byte[] probe = "kvferry etcd client key check".getBytes(StandardCharsets.US_ASCII);
		boolean matches;
		try {
			Signature sign = Signature.getInstance(algorithm);
			sign.initSign(key);
			sign.update(probe);
			byte[] signature = sign.sign();
			Signature verify = Signature.getInstance(algorithm);
			verify.initVerify(certificate.getPublicKey());
			verify.update(probe);
			matches = verify.verify(signature);
		}
		catch (GeneralSecurityException e) {
			matches = false;
		}
		if (!matches) {
			throw new IllegalArgumentException("etcd TLS: client key " + keyFile + " is not the key of client "
					+ "certificate " + certificateFile + " (" + certificate.getSubjectX500Principal() + ")");
		}
	}
}
