package io.kvferry.transport.netty.internal;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Objects;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The secret both ends of a connection must know, and the challenge-response that proves it without sending it.
 *
 * <p>Each side sends a random {@value #NONCE_LENGTH}-byte nonce in its {@code AUTH} frame. A side proves the secret
 * with {@code HMAC-SHA256(secret, "kvferry-auth-v1" || role || verifierNonce || proverNonce)}, where {@code role} is
 * the prover's role byte ({@code 'C'} connecting, {@code 'A'} accepting) and {@code verifierNonce} is the nonce the
 * other side chose for this connection. The verifier recomputes the value and compares in constant time. A captured
 * proof is useless elsewhere: another connection has other nonces, and a side's own proof never verifies as the
 * peer's because the roles differ. The secret authenticates peers only; it neither encrypts nor protects frames after
 * the handshake (TLS does).
 *
 * <p>Immutable and thread-safe; {@link #toString()} never shows the secret. The nonce generator is a DRBG seeded when
 * the instance is created (on the configuring thread), so event loops never read the OS entropy source.
 */
public final class SharedSecret {

	/** Bytes of a nonce. */
	public static final int NONCE_LENGTH = 32;
	/** Bytes of a proof (an HMAC-SHA256). */
	public static final int PROOF_LENGTH = 32;

	private static final String ALGORITHM = "HmacSHA256";
	private static final byte[] LABEL = "kvferry-auth-v1".getBytes(StandardCharsets.US_ASCII);

	/** Which end of the TCP connection proves. */
	public enum Role {
		/** The side that called connect. */
		CONNECTING('C'),
		/** The side that accepted. */
		ACCEPTING('A');

		private final byte code;

		Role(char code) {
			this.code = (byte) code;
		}

		/** @return the other end */
		public Role peer() {
			return this == CONNECTING ? ACCEPTING : CONNECTING;
		}
	}

	private final byte[] key;
	private final SecureRandom random;

	private SharedSecret(byte[] key) {
		this.key = key;
		this.random = newRandom();
		// Seed now, off any event loop, and fail here rather than in a handshake if HMAC-SHA256 is missing.
		random.nextBytes(new byte[NONCE_LENGTH]);
		proof(Role.CONNECTING, new byte[NONCE_LENGTH], new byte[NONCE_LENGTH]);
	}

	/**
	 * @param secret the secret's bytes, at least one (copied)
	 * @return the secret
	 */
	public static SharedSecret of(byte[] secret) {
		Objects.requireNonNull(secret, "secret");
		if (secret.length == 0) {
			throw new IllegalArgumentException("sharedSecret : 0 bytes (expected: at least 1 byte, ideally 32 random "
					+ "bytes)");
		}
		return new SharedSecret(secret.clone());
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
	 * @param prover the role of the side that proves
	 * @param verifierNonce the nonce the other side sent
	 * @param proverNonce the prover's own nonce
	 * @return {@value #PROOF_LENGTH} bytes
	 */
	public byte[] proof(Role prover, byte[] verifierNonce, byte[] proverNonce) {
		Objects.requireNonNull(prover, "prover");
		checkNonce(verifierNonce, "verifierNonce");
		checkNonce(proverNonce, "proverNonce");
		try {
			Mac mac = Mac.getInstance(ALGORITHM);
			mac.init(new SecretKeySpec(key, ALGORITHM));
			mac.update(LABEL);
			mac.update(prover.code);
			mac.update(verifierNonce);
			mac.update(proverNonce);
			return mac.doFinal();
		}
		catch (GeneralSecurityException e) {
			throw new IllegalStateException(ALGORITHM + " unavailable", e);
		}
	}

	/**
	 * Checks a proof in constant time.
	 *
	 * @param prover the role of the side that sent {@code proof}
	 * @param proof what it sent
	 * @param verifierNonce the verifying side's own nonce
	 * @param proverNonce the nonce the prover sent
	 * @return whether the prover knows this secret and answered this connection's nonces
	 */
	public boolean verify(Role prover, byte[] proof, byte[] verifierNonce, byte[] proverNonce) {
		Objects.requireNonNull(proof, "proof");
		return MessageDigest.isEqual(proof(prover, verifierNonce, proverNonce), proof);
	}

	private static void checkNonce(byte[] nonce, String name) {
		Objects.requireNonNull(nonce, name);
		if (nonce.length != NONCE_LENGTH) {
			throw new IllegalArgumentException(name + " : " + nonce.length + " bytes (expected: " + NONCE_LENGTH + ")");
		}
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof SharedSecret other && MessageDigest.isEqual(key, other.key);
	}

	@Override
	public int hashCode() {
		// Consistent with equals without exposing anything about the bytes.
		return SharedSecret.class.hashCode();
	}

	/** @return a placeholder: the secret never reaches a log line */
	@Override
	public String toString() {
		return "SharedSecret[redacted]";
	}
}
