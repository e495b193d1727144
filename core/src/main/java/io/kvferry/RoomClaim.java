package io.kvferry;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;

/**
 * What a decode rank presents to claim a room from prefill: the hand-off that lets the request's owner move the room to
 * a replacement decode later, and, for a replacement, the proof that the owner handed the room to it. The owner makes
 * claims with a {@link RoomHandoff}; a decode rank passes its claim to {@link KVReceiver#claim} before
 * {@code sendMetadata}.
 *
 * <p>The hand-off is the SHA-256 of a 32-byte secret only the owner knows; a replacement's proof is that secret.
 * Prefill serves a replacement only when the SHA-256 of its proof equals the hand-off the room's current decode
 * brought, so a decode that was not given the secret (the old decode included, which saw only its hash) cannot claim
 * the room. Without a hand-off ({@link #NONE}) a room is never re-targeted.
 */
public final class RoomClaim {

	/** Bytes of a proof and of a hand-off. */
	public static final int BYTES = 32;

	/** No hand-off: the room cannot move to another decode. */
	public static final RoomClaim NONE = new RoomClaim(new byte[0], new byte[0]);

	private static final HexFormat HEX = HexFormat.of();

	private final byte[] proof;
	private final byte[] handoff;

	/**
	 * @param proof the secret the owner handed this decode (a replacement), or empty (the room's first decode)
	 * @param handoff the SHA-256 of the secret the owner will hand the next decode, or empty (none)
	 */
	public RoomClaim(byte[] proof, byte[] handoff) {
		this.proof = check("proof", proof);
		this.handoff = check("handoff", handoff);
	}

	private static byte[] check(String what, byte[] bytes) {
		Objects.requireNonNull(bytes, what);
		if (bytes.length != 0 && bytes.length != BYTES) {
			throw new IllegalArgumentException(what + " : " + bytes.length + " bytes (expected: 0 or " + BYTES + ")");
		}
		return bytes.clone();
	}

	/** @return the proof, empty for a room's first decode */
	public byte[] proof() {
		return proof.clone();
	}

	/** @return the hand-off, empty when the room may not move on */
	public byte[] handoff() {
		return handoff.clone();
	}

	/** @return whether this claims a room another decode held: it carries a proof */
	public boolean isRetarget() {
		return proof.length > 0;
	}

	/** @return whether the room may move on from the decode that presents this claim */
	public boolean handsOn() {
		return handoff.length > 0;
	}

	/**
	 * @param handoff the hand-off the room's current decode brought
	 * @return whether this claim's proof is the secret behind {@code handoff} (constant time)
	 */
	public boolean proves(byte[] handoff) {
		return proof.length == BYTES && handoff.length == BYTES && MessageDigest.isEqual(sha256(proof), handoff);
	}

	/** @return the claim as text, {@code PROOF:HANDOFF} in hex (either part may be empty), to hand to another process */
	public String text() {
		return HEX.formatHex(proof) + ":" + HEX.formatHex(handoff);
	}

	/**
	 * @param text a claim's {@link #text()}
	 * @return the claim
	 */
	public static RoomClaim parse(String text) {
		int colon = text.indexOf(':');
		if (colon < 0) {
			throw new IllegalArgumentException("claim : not PROOF:HANDOFF in hex");
		}
		return new RoomClaim(HEX.parseHex(text.substring(0, colon)), HEX.parseHex(text.substring(colon + 1)));
	}

	/** @return the SHA-256 of {@code secret} */
	static byte[] sha256(byte[] secret) {
		try {
			return MessageDigest.getInstance("SHA-256").digest(secret);
		}
		catch (NoSuchAlgorithmException e) {
			throw new IllegalStateException("every Java platform has SHA-256", e);
		}
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof RoomClaim c && MessageDigest.isEqual(c.proof, proof)
				&& MessageDigest.isEqual(c.handoff, handoff);
	}

	@Override
	public int hashCode() {
		return java.util.Arrays.hashCode(handoff);
	}

	// Never the proof: a log line must not hand the room on.
	@Override
	public String toString() {
		return "RoomClaim{" + (isRetarget() ? "retarget" : "first") + (handsOn() ? ", hands on" : "") + '}';
	}
}
