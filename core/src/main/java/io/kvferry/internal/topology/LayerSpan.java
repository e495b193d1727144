package io.kvferry.internal.topology;

import io.kvferry.TopologyException;

/**
 * One side's KV region list described by model layer, for {@link LayerPairing#pairByLayer}: {@code regionCount}
 * regions holding the model layers from {@code startLayer} on, followed by {@code draftLayers} draft-model layers.
 * MHA lists hold the K buffers of the main layers, their V buffers, then the draft K and V buffers; MLA lists one
 * buffer per main layer, then one per draft layer. Immutable.
 *
 * @param regionCount KV regions in the list
 * @param startLayer first model layer held (the PP stage's start; 0 without PP)
 * @param draftLayers draft-model layers at the end of the list
 */
public record LayerSpan(int regionCount, int startLayer, int draftLayers) {

	/**
	 * @throws IllegalArgumentException when a value is negative
	 */
	public LayerSpan {
		if (regionCount < 0) {
			throw new IllegalArgumentException("regionCount : " + regionCount + " (expected: >= 0)");
		}
		if (startLayer < 0) {
			throw new IllegalArgumentException("startLayer : " + startLayer + " (expected: >= 0)");
		}
		if (draftLayers < 0) {
			throw new IllegalArgumentException("draftLayers : " + draftLayers + " (expected: >= 0)");
		}
	}

	/**
	 * @param mla whether the list holds MLA buffers (one per layer) rather than K and V buffers
	 * @return main-model layers in the list
	 * @throws TopologyException when the count does not fit the layout (odd MHA count, fewer regions than
	 *         draft layers)
	 */
	public int mainLayers(boolean mla) {
		if (!mla && regionCount % 2 != 0) {
			throw new TopologyException("MHA KV region count " + regionCount
					+ " (expected: an even count, K buffers then V buffers)");
		}
		int layers = (mla ? regionCount : regionCount / 2) - draftLayers;
		if (layers < 0) {
			throw new TopologyException("KV region count " + regionCount + " is too small for "
					+ draftLayers + " draft layers (mla=" + mla + ")");
		}
		return layers;
	}
}
