package io.kvferry.internal;

import java.util.ArrayList;
import java.util.List;

import io.kvferry.RoomClaim;

/**
 * How one prefill room moves to a replacement decode: the hand-off its current decode brought (the SHA-256 of the
 * secret only the request's owner holds), the chunks the engine sent so far, kept to replay to a replacement, whether
 * the room waits for one (its decode went, or is being fenced), and the replacement that waits for the old decode's
 * queued bytes to be written. Kept under the room's monitor.
 */
final class Retarget {

	// Null: the room never moves on.
	private byte[] handoff;
	// Every chunk dispatched while the room may move on, in order: the engine's pages stay held until the room ends.
	private final List<PrefillChunk> sent = new ArrayList<>();
	private boolean waiting;
	private PrefillDestination pending;

	/** The room's first decode asked: its claim says whether, and to whom, the owner may hand the room on. */
	void handOn(RoomClaim claim) {
		handoff = claim.handsOn() ? claim.handoff() : null;
	}

	/** @return whether the room may move to another decode */
	boolean handsOn() {
		return handoff != null;
	}

	/** @return whether no decode holds the room: it waits for its replacement, and nobody else may end it */
	boolean isOpen() {
		return waiting;
	}

	/**
	 * @param claim what a decode rank presents for a room another decode held
	 * @param required the decode ranks the room is asked by
	 * @return why the claim takes nothing, or null when it takes the room over
	 */
	String refuses(RoomClaim claim, int required) {
		if (!claim.isRetarget()) {
			return "the room is its owner's to hand on, and the request presents no claim";
		}
		if (handoff == null) {
			return "the decode that asked for it first brought no hand-off, so it never moves";
		}
		if (required != 1) {
			return "it is asked by " + required + " decode ranks (expected: 1; only a room asked by one decode rank "
					+ "per prefill rank moves)";
		}
		if (!claim.proves(handoff)) {
			return "its proof is not the secret behind the hand-off the room's owner committed to";
		}
		return null;
	}

	/**
	 * A claim took the room over: the hand-off moves on at once, so the proof just used takes nothing again.
	 *
	 * @return the replacement an earlier claim was attaching, which this one displaces, or null
	 */
	PrefillDestination claimed(RoomClaim claim, PrefillDestination next) {
		handoff = claim.handsOn() ? claim.handoff() : null;
		waiting = true;
		PrefillDestination displaced = pending;
		pending = next;
		return displaced;
	}

	/** @return whether {@code next} is still the room's replacement, which now holds it */
	boolean attach(PrefillDestination next) {
		if (pending != next) {
			return false;
		}
		pending = null;
		waiting = false;
		return true;
	}

	/** @return the chunks to replay to a replacement, in the order the engine sent them */
	List<PrefillChunk> sent() {
		return List.copyOf(sent);
	}

	/** The replacement got every chunk: a room that cannot move again keeps none. */
	void replayed() {
		if (handoff == null) {
			sent.clear();
		}
	}

	/** @return whether the chunk goes out now; false: no decode holds the room, and it waits for the replacement */
	boolean record(PrefillChunk c) {
		if (handoff != null || waiting) {
			sent.add(c);
		}
		return !waiting;
	}

	/** @return the replacement that was attaching over {@code s}, whose connection went; null if none */
	PrefillDestination lost(PrefillPeer s) {
		PrefillDestination p = pending;
		if (p == null || p.peer != s) {
			return null;
		}
		pending = null;
		return p;
	}

	/** The room's decode went: the room waits for the claim its owner hands on. */
	void waitForClaim() {
		waiting = true;
	}

	/** @return the replacement still attaching as the room ended, to be told; null if none */
	PrefillDestination ended() {
		PrefillDestination p = pending;
		pending = null;
		sent.clear();
		return p;
	}
}
