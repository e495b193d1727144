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
 * @param decodePageSize tokens per page of the decode rank that asked ({@code pageCount} counts pages of this size),
 *        or 0 when not known (then take it as the engine's own)
 */
public record RoomRequest(long room, int pageCount, int auxIndex, boolean dummy, int decodePrefixLen,
		int decodePageSize) {

	/** A request without decode prefix, from a decode rank whose page size is not known. */
	public RoomRequest(long room, int pageCount, int auxIndex, boolean dummy) {
		this(room, pageCount, auxIndex, dummy, 0, 0);
	}

	/** A request from a decode rank whose page size is not known. */
	public RoomRequest(long room, int pageCount, int auxIndex, boolean dummy, int decodePrefixLen) {
		this(room, pageCount, auxIndex, dummy, decodePrefixLen, 0);
	}

	/**
	 * The room's pages for an engine whose pages hold {@code pageSize} tokens, for an engine that does not know the
	 * room's token count: pages enough for every token slot decode asked for, prefix included, so that the two page
	 * counts describe one token count whatever the two page sizes.
	 *
	 * @param pageSize tokens per page of the engine
	 * @return {@code ceil((decodePrefixLen + pageCount × decodePageSize) / pageSize)}; with decode's page size not
	 *         known, {@code decodePrefixLen / pageSize + pageCount}
	 */
	public int pages(int pageSize) {
		if (pageSize < 1) {
			throw new IllegalArgumentException("pageSize : " + pageSize + " (expected: >= 1)");
		}
		if (decodePageSize == 0) {
			return decodePrefixLen / pageSize + pageCount;
		}
		long slots = decodePrefixLen + (long) pageCount * decodePageSize;
		return Math.toIntExact((slots + pageSize - 1) / pageSize);
	}
}
