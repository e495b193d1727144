package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.kvferry.transport.netty.internal.SharedSecret.Role;
import org.junit.jupiter.api.Test;

/** The proof function of the shared-secret handshake. */
class SharedSecretTest {

	private final SharedSecret secret =
			SharedSecret.of("correct horse battery staple".getBytes(StandardCharsets.UTF_8));
	private final byte[] verifierNonce = secret.newNonce();
	private final byte[] proverNonce = secret.newNonce();

	@Test
	void proofFromTheSameSecretAndNoncesVerifies() {
		byte[] proof = secret.proof(Role.CONNECTING, verifierNonce, proverNonce);
		assertThat(proof).hasSize(SharedSecret.PROOF_LENGTH);
		SharedSecret sameBytes = SharedSecret.of("correct horse battery staple".getBytes(StandardCharsets.UTF_8));
		assertThat(sameBytes.verify(Role.CONNECTING, proof, verifierNonce, proverNonce)).isTrue();
	}

	@Test
	void replayedProofFailsAgainstAnotherVerifierNonce() {
		byte[] captured = secret.proof(Role.CONNECTING, verifierNonce, proverNonce);
		// A later connection: the verifier picked a fresh nonce, the attacker replays the old proof and prover nonce.
		byte[] freshVerifierNonce = secret.newNonce();
		assertThat(secret.verify(Role.CONNECTING, captured, freshVerifierNonce, proverNonce)).isFalse();
	}

	@Test
	void proofFailsWhenTheProverNonceChanges() {
		byte[] captured = secret.proof(Role.CONNECTING, verifierNonce, proverNonce);
		assertThat(secret.verify(Role.CONNECTING, captured, verifierNonce, secret.newNonce())).isFalse();
	}

	@Test
	void aSidesOwnProofDoesNotVerifyAsThePeers() {
		// Reflection: the accepting side's proof sent back to it as if the connecting side had made it.
		byte[] acceptingProof = secret.proof(Role.ACCEPTING, verifierNonce, proverNonce);
		assertThat(secret.verify(Role.CONNECTING, acceptingProof, verifierNonce, proverNonce)).isFalse();
		assertThat(secret.verify(Role.ACCEPTING, acceptingProof, verifierNonce, proverNonce)).isTrue();
	}

	@Test
	void anotherSecretNeverVerifies() {
		byte[] proof = SharedSecret.of(new byte[] { 1 }).proof(Role.CONNECTING, verifierNonce, proverNonce);
		assertThat(secret.verify(Role.CONNECTING, proof, verifierNonce, proverNonce)).isFalse();
		assertThat(SharedSecret.of(new byte[] { 1 })).isEqualTo(SharedSecret.of(new byte[] { 1 }))
				.isNotEqualTo(SharedSecret.of(new byte[] { 2 }));
	}

	@Test
	void proofOfAnotherLengthDoesNotVerify() {
		byte[] proof = secret.proof(Role.CONNECTING, verifierNonce, proverNonce);
		assertThat(secret.verify(Role.CONNECTING, Arrays.copyOf(proof, 31), verifierNonce, proverNonce))
				.isFalse();
		assertThat(secret.verify(Role.CONNECTING, new byte[0], verifierNonce, proverNonce)).isFalse();
	}

	@Test
	void proofIsAnHmacOverLabelRoleAndBothNonces() throws Exception {
		Mac mac = Mac.getInstance("HmacSHA256");
		mac.init(new SecretKeySpec("k".getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
		mac.update("kvferry-auth-v1".getBytes(StandardCharsets.US_ASCII));
		mac.update((byte) 'A');
		mac.update(verifierNonce);
		mac.update(proverNonce);
		assertThat(SharedSecret.of(new byte[] { 'k' }).proof(Role.ACCEPTING, verifierNonce, proverNonce))
				.isEqualTo(mac.doFinal());
	}

	@Test
	void noncesAreFreshAndTheSecretIsNeverPrinted() {
		assertThat(secret.newNonce()).hasSize(SharedSecret.NONCE_LENGTH).isNotEqualTo(secret.newNonce());
		assertThat(secret.toString()).isEqualTo("SharedSecret[redacted]");
		assertThat(Role.CONNECTING.peer()).isEqualTo(Role.ACCEPTING);
		assertThat(Role.ACCEPTING.peer()).isEqualTo(Role.CONNECTING);
	}

	@Test
	void invalidArgumentsAreRefused() {
		assertThatThrownBy(() -> SharedSecret.of(new byte[0])).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> secret.proof(Role.CONNECTING, new byte[31], proverNonce))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("verifierNonce : 31 bytes (expected: 32)");
		assertThatThrownBy(() -> secret.proof(null, verifierNonce, proverNonce))
				.isInstanceOf(NullPointerException.class)
				.hasMessage("prover");
	}
}
