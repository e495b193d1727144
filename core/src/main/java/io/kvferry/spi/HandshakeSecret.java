package io.kvferry.spi;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Objects;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A secret both ends of a connection know, proved in a transport's handshake by challenge-response and never sent:
 * each side sends a random {@value #NONCE_LENGTH}-byte nonce, and a side proves the secret with
 * {@code HMAC-SHA256(secret, label || role || verifierNonce || proverNonce || len || field || ...)}, where
 * {@code label} names the transport's handshake (US-ASCII), {@code role} is one byte naming the prover's end,
 * {@code verifierNonce} the nonce the other side chose for this connection, and each field is preceded by its byte
 * count as a big-endian {@code i32}, so that no two field lists feed the MAC the same bytes. The verifier recomputes
 * the value and compares in constant time.
 *
 * <p>Shared by the transports so that each proves the secret the same way; each chooses its label and what its fields
 * bind (the endpoint dialled, the addresses exchanged). Immutable and thread-safe; {@link #toString()} never shows the
 * secret. The nonce generator is a DRBG seeded when the instance is made (on the configuring thread), so that no
 * transport thread reads the OS entropy source.
 */
public final class HandshakeSecret {

	/** Bytes of a nonce. */
	public static final int NONCE_LENGTH = 32;
	/** Bytes of a proof (an HMAC-SHA256). */
	public static final int PROOF_LENGTH = 32;

	private static final String ALGORITHM = "HmacSHA256";

	private final byte[] key;
	private final SecureRandom random;

	private HandshakeSecret(byte[] key) {
		this.key = key;
		this.random = newRandom();
		// Seed now, off any transport thread, and fail here rather than in a handshake if HMAC-SHA256 is missing.
		random.nextBytes(new byte[NONCE_LENGTH]);
		proof("kvferry", (byte) 0, new byte[NONCE_LENGTH], new byte[NONCE_LENGTH]);
	}

	/**
	 * @param secret the secret's bytes, at least one (copied)
	 * @return the secret
	 */
	public static HandshakeSecret of(byte[] secret) {
		Objects.requireNonNull(secret, "secret");
		if (secret.length == 0) {
			throw new IllegalArgumentException("sharedSecret : 0 bytes (expected: at least 1 byte, ideally 32 random "
					+ "bytes)");
		}
		return new HandshakeSecret(secret.clone());
	}

	private static SecureRandom newRandom() {
		try {
			return SecureRandom.getInstance("DRBG");
		}
		catch (NoSuchAlgorithmException e) {
			return new SecureRandom();
		}
	}

	/** @return a fresh random nonce */
	public byte[] newNonce() {
		byte[] nonce = new byte[NONCE_LENGTH];
		random.nextBytes(nonce);
		return nonce;
	}

	/**
	 * Computes the proof a side sends.
	 *
	 * @param label names the handshake, so that a proof of one transport's handshake is none of another's
	 * @param role the prover's end of the connection
	 * @param verifierNonce the nonce the other side sent
	 * @param proverNonce the prover's own nonce
	 * @param fields what else the proof binds, each length-prefixed
	 * @return {@value #PROOF_LENGTH} bytes
	 */
	public byte[] proof(String label, byte role, byte[] verifierNonce, byte[] proverNonce, byte[]... fields) {
		Objects.requireNonNull(label, "label");
		checkNonce(verifierNonce, "verifierNonce");
		checkNonce(proverNonce, "proverNonce");
		try {
			Mac mac = Mac.getInstance(ALGORITHM);
			mac.init(new SecretKeySpec(key, ALGORITHM));
			mac.update(label.getBytes(StandardCharsets.US_ASCII));
			mac.update(role);
			mac.update(verifierNonce);
			mac.update(proverNonce);
			for (byte[] field : fields) {
				int n = field.length;
				mac.update(new byte[] { (byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n });
				mac.update(field);
			}
			return mac.doFinal();
		}
		catch (GeneralSecurityException e) {
			throw new IllegalStateException(ALGORITHM + " unavailable", e);
		}
	}

	/**
	 * Checks a proof in constant time.
	 *
	 * @param proof what the prover sent
	 * @return whether the prover knows this secret and answered this connection's nonces and fields
	 */
	public boolean verify(byte[] proof, String label, byte role, byte[] verifierNonce, byte[] proverNonce,
			byte[]... fields) {
		Objects.requireNonNull(proof, "proof");
		return MessageDigest.isEqual(proof(label, role, verifierNonce, proverNonce, fields), proof);
	}

	private static void checkNonce(byte[] nonce, String name) {
		Objects.requireNonNull(nonce, name);
		if (nonce.length != NONCE_LENGTH) {
			throw new IllegalArgumentException(name + " : " + nonce.length + " bytes (expected: " + NONCE_LENGTH + ")");
		}
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof HandshakeSecret other && MessageDigest.isEqual(key, other.key);
	}

	@Override
	public int hashCode() {
		// Consistent with equals without exposing anything about the bytes.
		return HandshakeSecret.class.hashCode();
	}

	/** @return a placeholder: the secret never reaches a log line */
	@Override
	public String toString() {
		return "HandshakeSecret[redacted]";
	}
}
