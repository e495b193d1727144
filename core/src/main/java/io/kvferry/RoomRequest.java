package io.kvferry;

/**
 * Decode is ready for a room on a prefill rank: every decode rank that needs it has sent its destination. Published
 * on {@link PrefillKVManager#roomRequests()} so an engine (or an example) knows which rooms decode waits for.
 *
 * @param room the room
 * @param pageCount destination pages asked for (of the first real destination; 0 when only dummies asked)
 * @param auxIndex destination aux row of the first real destination, or -1
 * @param dummy whether every destination was a dummy (this rank only acknowledges)
 */
public record RoomRequest(long room, int pageCount, int auxIndex, boolean dummy) {
}
