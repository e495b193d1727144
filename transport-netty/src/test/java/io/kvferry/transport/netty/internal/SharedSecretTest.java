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

	/** What a connecting side dialled: a name, and the address the name led its socket to. */
	private static final DialledEndpoint DIALLED = new DialledEndpoint("prefill-0.example:5000", "10.0.0.7:5000");

	private final SharedSecret secret =
			SharedSecret.of("correct horse battery staple".getBytes(StandardCharsets.UTF_8));
	private final byte[] verifierNonce = secret.newNonce();
	private final byte[] proverNonce = secret.newNonce();

	@Test
	void proofFromTheSameSecretAndNoncesVerifies() {
		byte[] proof = secret.proof(Role.CONNECTING, verifierNonce, proverNonce, DIALLED);
		assertThat(proof).hasSize(SharedSecret.PROOF_LENGTH);
		SharedSecret sameBytes = SharedSecret.of("correct horse battery staple".getBytes(StandardCharsets.UTF_8));
		assertThat(sameBytes.verify(Role.CONNECTING, proof, verifierNonce, proverNonce, DIALLED)).isTrue();
	}

	@Test
	void replayedProofFailsAgainstAnotherVerifierNonce() {
		byte[] captured = secret.proof(Role.CONNECTING, verifierNonce, proverNonce, DIALLED);
		// A later connection: the verifier picked a fresh nonce, the attacker replays the old proof and prover nonce.
		byte[] freshVerifierNonce = secret.newNonce();
		assertThat(secret.verify(Role.CONNECTING, captured, freshVerifierNonce, proverNonce, DIALLED)).isFalse();
	}

	@Test
	void proofFailsWhenTheProverNonceChanges() {
		byte[] captured = secret.proof(Role.CONNECTING, verifierNonce, proverNonce, DIALLED);
		assertThat(secret.verify(Role.CONNECTING, captured, verifierNonce, secret.newNonce(), DIALLED)).isFalse();
	}

	@Test
	void aSidesOwnProofDoesNotVerifyAsThePeers() {
		// Reflection: the accepting side's proof sent back to it as if the connecting side had made it.
		byte[] acceptingProof = secret.proof(Role.ACCEPTING, verifierNonce, proverNonce, DIALLED);
		assertThat(secret.verify(Role.CONNECTING, acceptingProof, verifierNonce, proverNonce, DIALLED)).isFalse();
		assertThat(secret.verify(Role.ACCEPTING, acceptingProof, verifierNonce, proverNonce, DIALLED)).isTrue();
	}

	@Test
	void anotherSecretNeverVerifies() {
		byte[] proof = SharedSecret.of(new byte[] { 1 }).proof(Role.CONNECTING, verifierNonce, proverNonce, DIALLED);
		assertThat(secret.verify(Role.CONNECTING, proof, verifierNonce, proverNonce, DIALLED)).isFalse();
		assertThat(SharedSecret.of(new byte[] { 1 })).isEqualTo(SharedSecret.of(new byte[] { 1 }))
				.isNotEqualTo(SharedSecret.of(new byte[] { 2 }));
	}

	@Test
	void proofOfAnotherLengthDoesNotVerify() {
		byte[] proof = secret.proof(Role.CONNECTING, verifierNonce, proverNonce, DIALLED);
		assertThat(secret.verify(Role.CONNECTING, Arrays.copyOf(proof, 31), verifierNonce, proverNonce, DIALLED))
				.isFalse();
		assertThat(secret.verify(Role.CONNECTING, new byte[0], verifierNonce, proverNonce, DIALLED)).isFalse();
	}

	@Test
	void aProofForAnotherDialledEndpointDoesNotVerify() {
		// A relay dialled at its own address rewrote the announcement to the real listener's: the listener proves
		// over what it was told, the connecting side checks over what it dialled.
		byte[] overRewritten = secret.proof(Role.ACCEPTING, verifierNonce, proverNonce,
				new DialledEndpoint("10.0.0.7:5000", "10.0.0.7:5000"));
		DialledEndpoint relay = new DialledEndpoint("10.0.0.66:5000", "10.0.0.66:5000");
		assertThat(secret.verify(Role.ACCEPTING, overRewritten, verifierNonce, proverNonce, relay)).isFalse();
		// Every part of the announcement counts, and its fields cannot trade bytes.
		assertThat(secret.verify(Role.ACCEPTING, secret.proof(Role.ACCEPTING, verifierNonce, proverNonce, DIALLED),
				verifierNonce, proverNonce, new DialledEndpoint("prefill-0.example:5000", "10.0.0.8:5000"))).isFalse();
		assertThat(secret.proof(Role.CONNECTING, verifierNonce, proverNonce, new DialledEndpoint("1.2.3.4:1", "")))
				.isNotEqualTo(secret.proof(Role.CONNECTING, verifierNonce, proverNonce,
						new DialledEndpoint("", "1.2.3.4:1")));
	}

	@Test
	void proofIsAnHmacOverLabelRoleBothNoncesAndTheDialledEndpoint() throws Exception {
		Mac mac = Mac.getInstance("HmacSHA256");
		mac.init(new SecretKeySpec("k".getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
		mac.update("kvferry-auth-v2".getBytes(StandardCharsets.US_ASCII));
		mac.update((byte) 'A');
		mac.update(verifierNonce);
		mac.update(proverNonce);
		mac.update(new byte[] { 0, 0, 0, 22 });
		mac.update("prefill-0.example:5000".getBytes(StandardCharsets.US_ASCII));
		mac.update(new byte[] { 0, 0, 0, 13 });
		mac.update("10.0.0.7:5000".getBytes(StandardCharsets.US_ASCII));
		assertThat(SharedSecret.of(new byte[] { 'k' }).proof(Role.ACCEPTING, verifierNonce, proverNonce, DIALLED))
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
		assertThatThrownBy(() -> secret.proof(Role.CONNECTING, new byte[31], proverNonce, DIALLED))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("verifierNonce : 31 bytes (expected: 32)");
		assertThatThrownBy(() -> secret.proof(null, verifierNonce, proverNonce, DIALLED))
				.isInstanceOf(NullPointerException.class)
				.hasMessage("prover");
	}
}
