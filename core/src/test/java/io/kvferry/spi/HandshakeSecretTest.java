package io.kvferry.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.junit.jupiter.api.Test;

/**
 * The proof transports share: HMAC-SHA256 over the label, the role, both nonces and each field with its length, so
 * that a proof verifies only for the same secret, label, role, nonces and fields, and no two field lists feed the MAC
 * the same bytes.
 */
class HandshakeSecretTest {

	private static final byte[] KEY = "correct horse battery staple".getBytes(StandardCharsets.UTF_8);
	private final HandshakeSecret secret = HandshakeSecret.of(KEY);
	private final byte[] verifier = nonce(1);
	private final byte[] prover = nonce(2);

	@Test
	void theProofIsTheHmacOfTheLabelRoleNoncesAndLengthPrefixedFields() throws Exception {
		ByteArrayOutputStream input = new ByteArrayOutputStream();
		input.writeBytes("label".getBytes(StandardCharsets.US_ASCII));
		input.write('C');
		input.writeBytes(verifier);
		input.writeBytes(prover);
		input.writeBytes(new byte[] { 0, 0, 0, 2, 'a', 'b' });
		input.writeBytes(new byte[] { 0, 0, 0, 0 });
		Mac mac = Mac.getInstance("HmacSHA256");
		mac.init(new SecretKeySpec(KEY, "HmacSHA256"));
		byte[] expected = mac.doFinal(input.toByteArray());

		byte[] proof = secret.proof("label", (byte) 'C', verifier, prover, new byte[] { 'a', 'b' }, new byte[0]);
		assertThat(proof).hasSize(HandshakeSecret.PROOF_LENGTH).isEqualTo(expected);
		assertThat(HandshakeSecret.of(KEY).verify(proof, "label", (byte) 'C', verifier, prover,
				new byte[] { 'a', 'b' }, new byte[0])).isTrue();
	}

	@Test
	void aProofVerifiesForNothingElse() {
		byte[] field = { 'a', 'b' };
		byte[] proof = secret.proof("label", (byte) 'C', verifier, prover, field);
		assertThat(HandshakeSecret.of(new byte[] { 1 }).verify(proof, "label", (byte) 'C', verifier, prover, field))
				.as("another secret").isFalse();
		assertThat(secret.verify(proof, "other", (byte) 'C', verifier, prover, field)).as("another label").isFalse();
		assertThat(secret.verify(proof, "label", (byte) 'A', verifier, prover, field)).as("another role").isFalse();
		assertThat(secret.verify(proof, "label", (byte) 'C', prover, verifier, field)).as("nonces swapped").isFalse();
		assertThat(secret.verify(proof, "label", (byte) 'C', verifier, prover, new byte[] { 'a', 'c' }))
				.as("another field").isFalse();
		// The same bytes cut into other fields.
		assertThat(secret.verify(proof, "label", (byte) 'C', verifier, prover, new byte[] { 'a' }, new byte[] { 'b' }))
				.as("fields cut elsewhere").isFalse();
	}

	@Test
	void nonceLengthsAndAnEmptySecretAreRefusedAndTheSecretNeverShows() {
		assertThatThrownBy(() -> secret.proof("label", (byte) 'C', new byte[31], prover))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("verifierNonce : 31 bytes");
		assertThatThrownBy(() -> HandshakeSecret.of(new byte[0])).isInstanceOf(IllegalArgumentException.class);
		assertThat(secret.newNonce()).hasSize(HandshakeSecret.NONCE_LENGTH).isNotEqualTo(secret.newNonce());
		assertThat(secret).hasToString("HandshakeSecret[redacted]").isEqualTo(HandshakeSecret.of(KEY))
				.isNotEqualTo(HandshakeSecret.of(new byte[] { 1 }));
	}

	private static byte[] nonce(int fill) {
		byte[] n = new byte[HandshakeSecret.NONCE_LENGTH];
		java.util.Arrays.fill(n, (byte) fill);
		return n;
	}
}
