package io.kvferry.spi;

import io.kvferry.FailureCause;

/**
 * The failure codes of the wire: one fixed number per {@link FailureCause}, carried by a failed
 * {@link KVMessage.Status} and by {@link KVMessage.Abort}, so that the receiver knows why a room ended without reading
 * the reason's words. The numbers are the protocol's, not the enum's order: a cause added to the enum gets a new
 * number here (the switch below does not compile without one), and a number is never reused.
 */
public final class FailureCodes {

	/** The code of a Success, and of a message that names no cause. */
	public static final int NONE = 0;

	/** The largest code the wire can carry (one unsigned byte). */
	public static final int MAX = 255;

	// Each code's cause, built from code() so that the table exists once.
	private static final FailureCause[] BY_CODE = new FailureCause[MAX + 1];

	static {
		for (FailureCause cause : FailureCause.values()) {
			int code = code(cause);
			if (code <= NONE || code > MAX || BY_CODE[code] != null) {
				throw new IllegalStateException("failure code " + code + " of " + cause + " is out of range or taken");
			}
			BY_CODE[code] = cause;
		}
	}

	private FailureCodes() {
	}

	/** @return the wire code of {@code cause}, 1..{@value #MAX} */
	public static int code(FailureCause cause) {
		return switch (cause) {
			case TIMEOUT -> 1;
			case ABORTED -> 2;
			case CONNECTION_LOST -> 3;
			case INCOMPATIBLE -> 4;
			case BOOTSTRAP -> 5;
			case PEER_FAILED -> 6;
			case PEER_RESTARTED -> 7;
			case CLOSED -> 8;
			case PROTOCOL -> 9;
			case INCOMPLETE -> 10;
			case OVERLOAD -> 11;
			case DRAINING -> 12;
			case REQUEUE -> 13;
			case LEASE_EXPIRED -> 14;
			case OTHER -> 15;
			case PEER_UNAVAILABLE -> 16;
			case MISMATCH -> 17;
		};
	}

	/**
	 * The cause a receiver gives a room that its peer failed with {@code code}. A code that names a cause is read as
	 * that cause; {@link #NONE}, {@link FailureCause#OTHER}'s code and a code this side does not know (a later
	 * release's) read as {@link FailureCause#PEER_FAILED}, the peer's failure without a category: never an error,
	 * since the room failed on the peer whatever the number says.
	 *
	 * @param code the wire code, 0..{@value #MAX}
	 * @return the cause, never {@link FailureCause#OTHER}
	 */
	public static FailureCause peerCause(int code) {
		FailureCause cause = code > NONE && code < BY_CODE.length ? BY_CODE[code] : null;
		return cause == null || cause == FailureCause.OTHER ? FailureCause.PEER_FAILED : cause;
	}
}
