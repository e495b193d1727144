package io.kvferry;

/**
 * How an attention backend that keeps a layer's K and V in one allocation orders them, for
 * {@link KVArgs.Builder#fusedKvRegions}. kvferry moves K and V as separate regions; a fused buffer whose K and V are two
 * contiguous halves is split into those regions when the args are built, so nothing else changes and the other side
 * may hold its K and V fused or apart.
 */
public enum FusedKVLayout {

	/**
	 * Every page's K, then every page's V: a layer buffer of shape {@code [2, num_blocks, block, heads, dim]}, as vLLM's
	 * FlashAttention backend allocates it. The first half becomes the layer's K region, the second its V region.
	 */
	K_THEN_V,

	/**
	 * K and V side by side within each page: a layer buffer of shape {@code [num_blocks, 2, block, heads, dim]}, as
	 * FlashInfer allocates it. Refused: a page's K is one item of a region only if the next page's K follows it, and
	 * here the page's V lies between them.
	 */
	INTERLEAVED_PER_PAGE
}
