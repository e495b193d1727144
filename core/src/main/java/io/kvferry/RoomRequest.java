package io.kvferry;

/**
 * Decode is ready for a room on a prefill rank: every decode rank that needs it has sent its destination. Published
 * on {@link PrefillKVManager#roomRequests()} so an engine (or an example) knows which rooms decode waits for.
 *
 * @param room the room
 * @param pageCount destination pages asked for (of the first real destination; 0 when only dummies asked)
 * @param auxIndex destination aux row of the first real destination, or -1
 * @param dummy whether every destination was a dummy (this rank only acknowledges)
 * @param decodePrefixLen tokens decode already holds (its prefix cache) before the {@code pageCount} pages it asked
 *        for: the room has {@code decodePrefixLen / pageSize + pageCount} pages, all of which the engine passes to
 *        its sender (the prefix's pages are not sent). {@code pageCount} counts decode's pages: when decode's page
 *        size differs from this rank's, the engine's own page count is the one to pass, and the two must hold the
 *        same tokens
 */
public record RoomRequest(long room, int pageCount, int auxIndex, boolean dummy, int decodePrefixLen) {

	/** A request without decode prefix. */
	public RoomRequest(long room, int pageCount, int auxIndex, boolean dummy) {
		this(room, pageCount, auxIndex, dummy, 0);
	}
}
