package io.kvferry.internal;

import io.kvferry.RoomPath;

/**
 * The required-path check both sides make on their end of a room's connections, and the reason a room fails with
 * when a connection does not meet it: {@code room 7 requires TLS, but its path to decode rank 10.0.0.2:4100 is TCP
 * with 2 stripes}.
 */
final class PathCheck {

	private static final String REQUIRES = " requires ";
	private static final String BUT = ", but its path to ";

	private PathCheck() {
	}

	/**
	 * @param peer the peer, as a reason names it: {@code prefill rank host:port}, {@code decode rank host:port}
	 * @return why the room may not travel by {@code actual}, or null when it meets {@code required}
	 */
	static String refusal(long room, RoomPath.Requirement required, RoomPath actual, String peer) {
		if (required.isMetBy(actual)) {
			return null;
		}
		if (actual.kind() == RoomPath.Kind.UNKNOWN) {
			// "unknown path" would read as the room not having one: it has, but its transport does not say which.
			return "room " + room + REQUIRES + required.describe() + ", but the connection to " + peer + " does not say "
					+ "what carries its bytes (its transport reports no path), so it cannot be shown to be "
					+ required.describe();
		}
		return "room " + room + REQUIRES + required.describe() + BUT + peer + " is " + actual;
	}
}
