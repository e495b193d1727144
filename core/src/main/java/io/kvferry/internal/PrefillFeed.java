package io.kvferry.internal;

import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;

/**
 * What the engine handed one prefill room so far: init's page count and aux row, how many pages its chunks covered,
 * and the chunk going out layer by layer, if any. Misuse (a send before init, more pages than init gave, a whole chunk
 * in the middle of a layer-wise one) throws to the engine and changes nothing.
 *
 * <p>Not thread-safe: kept under the room's monitor. The static checks run before it, on the caller's thread.
 */
final class PrefillFeed {

	private final long room;
	int numPages = -1;
	int auxIndex = -1;
	private int cursor;
	// The chunk being sent layer by layer, until all its layers went.
	private LayerwiseChunk layerwise;

	PrefillFeed(long room) {
		this.room = room;
	}

	void init(int numPages, int auxIndex) {
		if (this.numPages >= 0) {
			throw new IllegalStateException("room " + room + ": init called twice");
		}
		this.numPages = numPages;
		this.auxIndex = auxIndex;
	}

	/** Checks a whole chunk before it is taken; throws naming the misuse. */
	void checkWhole(int[] pages) {
		if (numPages < 0) {
			throw new IllegalStateException("room " + room + ": send before init");
		}
		if (layerwise != null) {
			throw new IllegalStateException("room " + room + ": whole chunk sent while " + layerwise.progress()
					+ " (expected: every layer of it first)");
		}
		checkRoomFor(pages);
	}

	/** @return the checked whole chunk, taken: the room's next pages */
	PrefillChunk whole(int[] pages, int[][] states) {
		PrefillChunk c = new PrefillChunk(pages, cursor, cursor + pages.length == numPages, states);
		cursor += pages.length;
		return c;
	}

	/**
	 * Takes one layer of a chunk: the first layer opens the chunk, the last closes it.
	 *
	 * @param layers the rank's layers
	 * @param regions the KV buffers of {@code layer}
	 * @return the layer's share of the chunk
	 */
	PrefillChunk layer(int layer, int[] pages, int[][] states, LayerRegions layers, int[] regions) {
		if (numPages < 0) {
			throw new IllegalStateException("room " + room + ": sendLayer before init");
		}
		LayerwiseChunk chunk = layerwise;
		boolean opens = chunk == null;
		if (opens) {
			checkRoomFor(pages);
			chunk = new LayerwiseChunk(pages, cursor, layers.layers());
		}
		String refused = chunk.refuse(room, layer, pages);
		if (refused != null) {
			throw new IllegalStateException(refused);
		}
		chunk.sent(layer);
		boolean closes = chunk.isComplete();
		if (opens) {
			cursor += pages.length;
		}
		layerwise = closes ? null : chunk;
		return new PrefillChunk(pages, chunk.offset(), closes && chunk.offset() + pages.length == numPages, states,
				regions, opens, closes);
	}

	/** @return whether the chunks so far covered every page init gave */
	boolean isComplete() {
		return cursor == numPages;
	}

	private void checkRoomFor(int[] pages) {
		if (cursor + pages.length > numPages) {
			throw new IllegalStateException("room " + room + ": sending " + (cursor + pages.length)
					+ " pages, more than the " + numPages + " given to init");
		}
	}

	/** Checks a room's aux row: -1 (none) or a row every aux buffer has. */
	static void checkAuxIndex(KVArgs args, int auxIndex) {
		checkIndex("auxIndex", auxIndex, args.auxRegions().isEmpty() ? -1 : minItems(args.auxRegions()), true);
	}

	/**
	 * Checks a chunk's page and state indices.
	 *
	 * @return the state lists, one per component
	 */
	static int[][] checkPages(KVArgs args, int[] pages, int[][] stateIndices) {
		List<MemoryRegion> stateRegions = args.stateRegions();
		int[][] states = StateLists.check(args.stateKinds(), stateRegions.size(), stateIndices);
		long kvItems = minItems(args.kvRegions());
		for (int p : pages) {
			checkIndex("page index", p, kvItems, false);
		}
		int[][] perRegion = StateLists.perRegion(args.stateKinds(), stateRegions.size(), states);
		for (int i = 0; i < perRegion.length; i++) {
			for (int st : perRegion[i]) {
				checkIndex("state index", st, stateRegions.get(i).itemCount(), false);
			}
		}
		return states;
	}

	private static long minItems(List<MemoryRegion> regions) {
		return regions.stream().mapToLong(MemoryRegion::itemCount).min().orElse(0);
	}

	private static void checkIndex(String what, int index, long items, boolean allowNone) {
		if (allowNone && index == -1) {
			return;
		}
		if (index < 0 || index >= items) {
			throw new IllegalArgumentException(what + " : " + index + " (expected: 0.." + (items - 1) + ")");
		}
	}
}
