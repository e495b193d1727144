package io.kvferry.transport.ucx.internal;

/** What one read of a UCX handshake socket returns: a hello ({@link Handshake}), a challenge or a proof. */
sealed interface HandshakeStep permits Handshake, HandshakeStep.Challenge, HandshakeStep.Proof {

	/** The listener's nonce: the peer must now prove the secret. */
	record Challenge(byte[] nonce) implements HandshakeStep {
	}

	/** The connecting side's proof of the secret. */
	record Proof(byte[] proof) implements HandshakeStep {
	}
}
