package io.kvferry.transport.netty.internal;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

import io.kvferry.spi.HandshakeSecret;

/**
 * The secret both ends of a connection must know, and the challenge-response that proves it without sending it.
 *
 * <p>Each side sends a random {@value #NONCE_LENGTH}-byte nonce in its {@code AUTH} frame, and the connecting side
 * also the endpoint it dialled ({@link DialledEndpoint}). A side proves the secret with
 * {@code HMAC-SHA256(secret, "kvferry-auth-v2" || role || verifierNonce || proverNonce || len || endpoint || len ||
 * address)}, where {@code role} is the prover's role byte ({@code 'C'} connecting, {@code 'A'} accepting),
 * {@code verifierNonce} is the nonce the other side chose for this connection, {@code endpoint} and {@code address}
 * are the connecting side's announcement in UTF-8 and each {@code len} is its byte count as a big-endian {@code i32}.
 * The verifier recomputes the value and compares in constant time.
 *
 * <p>What the proof binds: a captured proof is useless on another connection (other nonces); a side's own proof never
 * verifies as the peer's (the roles differ); and a proof obtained through a relay is useless to it, because the
 * accepting side refuses an endpoint that is not one of its names and the connecting side checks the accepting
 * side's proof over the endpoint it dialled itself, so a relay dialled at its own address can neither forward the
 * announcement unchanged nor rewrite it. The accepting side proves only after the connecting side's proof verified,
 * so a party without the secret that connects to a listener never obtains a proof over nonces of its choosing (no
 * oracle, nothing to guess a weak secret from offline). The secret authenticates peers only; it neither encrypts
 * nor protects frames after the handshake, and cannot stop a party on the network path (TLS does).
 *
 * <p>Immutable and thread-safe; {@link #toString()} never shows the secret. The MAC, the nonces and the constant-time
 * comparison are core's {@link HandshakeSecret}, which the other transports prove their secrets with too.
 */
public final class SharedSecret {

	/** Bytes of a nonce. */
	public static final int NONCE_LENGTH = HandshakeSecret.NONCE_LENGTH;
	/** Bytes of a proof (an HMAC-SHA256). */
	public static final int PROOF_LENGTH = HandshakeSecret.PROOF_LENGTH;

	private static final String LABEL = "kvferry-auth-v2";

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

	private final HandshakeSecret secret;

	private SharedSecret(HandshakeSecret secret) {
		this.secret = secret;
	}

	/**
	 * @param secret the secret's bytes, at least one (copied)
	 * @return the secret
	 */
	public static SharedSecret of(byte[] secret) {
		return new SharedSecret(HandshakeSecret.of(secret));
	}

	/** @return a fresh random nonce */
	public byte[] newNonce() {
		return secret.newNonce();
	}

	/**
	 * Computes the proof a side sends.
	 *
	 * @param prover the role of the side that proves
	 * @param verifierNonce the nonce the other side sent
	 * @param proverNonce the prover's own nonce
	 * @param dialled what the connecting side dialled: its own record on the connecting side, the one its
	 *        {@code AUTH} announced on the accepting side
	 * @return {@value #PROOF_LENGTH} bytes
	 */
	public byte[] proof(Role prover, byte[] verifierNonce, byte[] proverNonce, DialledEndpoint dialled) {
		Objects.requireNonNull(prover, "prover");
		Objects.requireNonNull(dialled, "dialled");
		return secret.proof(LABEL, prover.code, verifierNonce, proverNonce, utf8(dialled.endpoint()),
				utf8(dialled.address()));
	}

	private static byte[] utf8(String value) {
		return value.getBytes(StandardCharsets.UTF_8);
	}

	/**
	 * Checks a proof in constant time.
	 *
	 * @param prover the role of the side that sent {@code proof}
	 * @param proof what it sent
	 * @param verifierNonce the verifying side's own nonce
	 * @param proverNonce the nonce the prover sent
	 * @param dialled what the connecting side dialled, as the verifier knows it
	 * @return whether the prover knows this secret and answered this connection's nonces and dialled endpoint
	 */
	public boolean verify(Role prover, byte[] proof, byte[] verifierNonce, byte[] proverNonce,
			DialledEndpoint dialled) {
		Objects.requireNonNull(prover, "prover");
		Objects.requireNonNull(dialled, "dialled");
		return secret.verify(proof, LABEL, prover.code, verifierNonce, proverNonce, utf8(dialled.endpoint()),
				utf8(dialled.address()));
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof SharedSecret other && secret.equals(other.secret);
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
