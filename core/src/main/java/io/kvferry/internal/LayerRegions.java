package io.kvferry.internal;

import io.kvferry.internal.topology.LayerSpan;

/**
 * The layers of one rank's KV buffer list and the buffers each one owns. Layer {@code l} counts the main-model layers
 * of the list first, then its draft-model layers; an MHA layer owns its K buffer and its V buffer, an MLA layer its one
 * latent buffer. Immutable.
 */
final class LayerRegions {

	private final int main;
	private final int draft;
	private final boolean mla;

	private LayerRegions(int main, int draft, boolean mla) {
		this.main = main;
		this.draft = draft;
		this.mla = mla;
	}

	/**
	 * @param regionCount KV buffers in the list
	 * @param draftLayers draft-model layers at its end
	 * @param mla one buffer per layer rather than K and V
	 * @throws io.kvferry.TopologyException when the count does not fit the layout
	 */
	static LayerRegions of(int regionCount, int draftLayers, boolean mla) {
		return new LayerRegions(new LayerSpan(regionCount, 0, draftLayers).mainLayers(mla), draftLayers, mla);
	}

	/** @return KV buffers in the list */
	int regionCount() {
		return mla ? main + draft : 2 * (main + draft);
	}

	/** @return layers in the list, main and draft */
	int layers() {
		return main + draft;
	}

	/** @return the positions of the layer's buffers in the list: MLA one, MHA its K buffer then its V buffer */
	int[] regions(int layer) {
		if (layer < 0 || layer >= layers()) {
			throw new IllegalArgumentException("layer : " + layer + " (expected: 0.." + (layers() - 1) + ")");
		}
		if (mla) {
			return new int[] { layer };
		}
		if (layer < main) {
			return new int[] { layer, main + layer };
		}
		int j = layer - main;
		return new int[] { 2 * main + j, 2 * main + draft + j };
	}

	/** @return the layer that owns the buffer at list position {@code region} */
	int layerOf(int region) {
		if (mla) {
			return region;
		}
		if (region < 2 * main) {
			return region % main;
		}
		return main + (region - 2 * main) % draft;
	}
}
