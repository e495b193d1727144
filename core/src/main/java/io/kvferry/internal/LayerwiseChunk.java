package io.kvferry.internal;

import java.util.Arrays;
import java.util.BitSet;

/**
 * A prefill chunk being sent layer by layer: its pages, where it starts in the room, and which of the rank's layers
 * went out. Complete once every layer went, each once. Not thread-safe: kept under the room's monitor.
 */
final class LayerwiseChunk {

	private final int[] pages;
	private final int offset;
	private final int layers;
	private final BitSet sent;

	LayerwiseChunk(int[] pages, int offset, int layers) {
		this.pages = pages;
		this.offset = offset;
		this.layers = layers;
		this.sent = new BitSet(layers);
	}

	int[] pages() {
		return pages;
	}

	int offset() {
		return offset;
	}

	/** @return why {@code layer} of {@code pageIndices} cannot be sent as part of this chunk, or null */
	String refuse(long room, int layer, int[] pageIndices) {
		if (!Arrays.equals(pages, pageIndices)) {
			return "room " + room + ": layer " + layer + " names other pages than the chunk at page " + offset
					+ " whose " + sent.cardinality() + " of " + layers + " layers were sent (expected: the same "
					+ "pages for every layer of a chunk, until all its layers were sent)";
		}
		if (sent.get(layer)) {
			return "room " + room + ": layer " + layer + " of the chunk at page " + offset + " was already sent";
		}
		return null;
	}

	/** Records {@code layer} as sent. */
	void sent(int layer) {
		sent.set(layer);
	}

	boolean isComplete() {
		return sent.cardinality() == layers;
	}

	/** @return a description for error messages */
	String progress() {
		return "the chunk at page " + offset + " has " + sent.cardinality() + " of " + layers + " layers sent";
	}
}
