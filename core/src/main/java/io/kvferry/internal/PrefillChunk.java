package io.kvferry.internal;

/**
 * A chunk the engine handed to a prefill room, or one layer of it: {@code regions} are the KV buffers it moves (null:
 * all), {@code opens} whether it is the chunk's first piece, {@code closes} its last; {@code last} whether it closes
 * the room's last chunk.
 */
record PrefillChunk(int[] pages, int offset, boolean last, int[][] stateIndices, int[] regions, boolean opens,
		boolean closes) {

	PrefillChunk(int[] pages, int offset, boolean last, int[][] stateIndices) {
		this(pages, offset, last, stateIndices, null, true, true);
	}
}
