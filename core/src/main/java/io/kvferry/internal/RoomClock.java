package io.kvferry.internal;

import io.kvferry.RoomPath;
import io.kvferry.RoomPhases.Phase;
import io.kvferry.RoomPhases;

/**
 * When one room passed the marks its phases run between, on {@link System#nanoTime()}, and the path its bytes took;
 * turned into {@link RoomPhases} once, as the room ends. A few volatile longs per room: each mark is one clock read
 * and one write where it happens, without a lock (the transport's threads mark bytes), and nothing is allocated until
 * the end.
 */
final class RoomClock {

	private final boolean decode;
	// 0: not reached. Written once each, but lastByte, which each buffer that received its last byte moves on.
	private volatile long opened;
	private volatile long connected;
	private volatile long asked;
	private volatile long firstByte;
	private volatile long lastByte;
	private volatile long ended;
	private volatile RoomPhases phases = RoomPhases.NONE;
	private volatile RoomPath path = RoomPath.UNKNOWN;

	/** @param decode whether the room is a receiver's (else a sender's) */
	RoomClock(boolean decode) {
		this.decode = decode;
	}

	/** @return now, never 0 (0 marks a mark not reached) */
	static long now() {
		long t = System.nanoTime();
		return t == 0 ? 1 : t;
	}

	/** The room reached its first state; under its monitor. */
	void opened(long at) {
		opened = at;
	}

	long openedNanos() {
		return opened;
	}

	/** Decode: every prefill rank of the room is resolved and connected; with the path they share. */
	void connected(RoomPath travelled) {
		path = travelled;
		connected = now();
	}

	/** The room's peers are connected over {@code p}, which the room's required path refuses: no phase mark. */
	void refused(RoomPath p) {
		path = p;
	}

	/** Prefill: a decode rank asked over {@code p}; {@code all} when it was the last one the room waits for. */
	void asked(RoomPath p, boolean all) {
		path = path.and(p);
		if (all) {
			asked = now();
		}
	}

	/** The room's first byte was sent (prefill) or landed (decode); once. */
	void firstByte() {
		firstByte = now();
	}

	/** Decode: one of the room's buffers received its last byte. */
	void landed() {
		lastByte = now();
	}

	/** @return when the room ended, or 0 before */
	long endedNanos() {
		return ended;
	}

	RoomPath path() {
		return path;
	}

	RoomPhases phases() {
		return phases;
	}

	/**
	 * The room ended at {@code at}: its phases are fixed from the marks reached, each running until the next one
	 * reached, the last until the end. Called once, before the terminal state is published, so that whoever sees it
	 * finds the phases.
	 */
	RoomPhases end(long at, boolean success) {
		ended = at;
		long[] start = new long[Phase.values().length];
		if (decode) {
			start[Phase.BOOTSTRAP.ordinal()] = opened;
			start[Phase.WAITING_FOR_PEER.ordinal()] = connected;
			start[Phase.WIRE.ordinal()] = firstByte;
			// A failed room's bytes stopped without landing all: its wire ran until it failed.
			start[Phase.LANDING.ordinal()] = success && firstByte != 0 ? Math.max(lastByte, firstByte) : 0;
		}
		else {
			start[Phase.WAITING_FOR_PEER.ordinal()] = opened;
			start[Phase.WAITING_FOR_ENGINE.ordinal()] = asked;
			start[Phase.WIRE.ordinal()] = firstByte;
		}
		long[] nanos = new long[start.length];
		for (int i = 0; i < start.length; i++) {
			if (start[i] == 0) {
				nanos[i] = -1;
				continue;
			}
			long until = at;
			for (int j = i + 1; j < start.length; j++) {
				if (start[j] != 0) {
					until = start[j];
					break;
				}
			}
			nanos[i] = Math.max(0, until - start[i]);
		}
		RoomPhases fixed = RoomPhases.ofNanos(nanos);
		phases = fixed;
		return fixed;
	}
}
