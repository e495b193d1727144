package io.kvferry;

import java.security.SecureRandom;

/**
 * The request owner's side of a room's hand-offs (a router, or the engine that owns the request): it keeps the secret
 * that moves the room and makes each decode's {@link RoomClaim}. The room's first decode gets {@link #first()}; when
 * that decode dies, or hangs, the owner gives a replacement decode {@link #handOff()}, and prefill serves the room to
 * the replacement from the pages it still holds, never again to the decode it replaced.
 *
 * <pre>{@code
 * RoomHandoff owner = RoomHandoff.create();
 * KVReceiver first = decodeA.receiver(bootstrap, room);
 * first.claim(owner.first());
 * first.sendMetadata(pages, auxRow, new int[0]);
 * // decode A died: decode B takes the room over
 * KVReceiver second = decodeB.receiver(bootstrap, room);
 * second.claim(owner.handOff());
 * second.sendMetadata(pagesOnB, auxRowOnB, new int[0]);
 * }</pre>
 *
 * Thread-safe. Keep it with the request, and hand a claim only to the decode that is to hold the room.
 */
public final class RoomHandoff {

	private static final SecureRandom RANDOM = new SecureRandom();

	// The secret the next decode proves it was handed; only its hash leaves this object before it is handed.
	private byte[] next = secret();

	private RoomHandoff() {
	}

	/** @return a new hand-off for one request */
	public static RoomHandoff create() {
		return new RoomHandoff();
	}

	/** @return the claim of the room's first decode: no proof, and the hash of the secret the next one gets */
	public synchronized RoomClaim first() {
		return new RoomClaim(new byte[0], RoomClaim.sha256(next));
	}

	/**
	 * Hands the room to another decode: the claim proves the current secret and commits to a fresh one, so that the
	 * room may move again, and nobody who saw an earlier claim can take it.
	 *
	 * @return the replacement decode's claim
	 */
	public synchronized RoomClaim handOff() {
		byte[] proof = next;
		next = secret();
		return new RoomClaim(proof, RoomClaim.sha256(next));
	}

	private static byte[] secret() {
		byte[] s = new byte[RoomClaim.BYTES];
		RANDOM.nextBytes(s);
		return s;
	}
}
