package io.kvferry;

/**
 * The kind of a hybrid model's state region ({@link KVArgs.Builder#stateKinds}), as SGLang's {@code state_types}.
 * Regions of one kind form one state component; a room names one index list per component, in the order the kinds
 * first appear among the state regions, and prefill and decode must declare the same order (checked at the
 * handshake).
 */
public enum StateKind {

	/**
	 * Mamba / linear-attention state: one slot per room per state tensor. When attention TP sizes differ, each item is
	 * sliced along its TP-sharded (outermost) dimension, whose size on the rank is given by
	 * {@link KVArgs.Builder#stateTpDims}.
	 */
	MAMBA,

	/**
	 * Sliding-window attention KV: the pages covering the last sliding window (see {@link #swaWindowPages}), in the SWA
	 * pool's index space. When prefill and decode name different numbers of pages, the common prefix moves and a
	 * warning is logged.
	 */
	SWA,

	/** DSA (sparse-attention indexer) cache: pages for the whole sequence. */
	DSA;

	/**
	 * The positions, in a room's page list, of the pages that hold the last {@code window} tokens: the window start
	 * rounded down to a page, up to the last page.
	 *
	 * @param tokens the room's tokens
	 * @param window the sliding window in tokens
	 * @param pageSize tokens per page
	 * @return {@code {firstPage, pageCount}}
	 * @throws IllegalArgumentException for a negative token count or a window or page size below 1
	 */
	public static int[] swaWindowPages(int tokens, int window, int pageSize) {
		if (tokens < 0 || window < 1 || pageSize < 1) {
			throw new IllegalArgumentException("swa window : tokens=" + tokens + " window=" + window + " pageSize="
					+ pageSize + " (expected: tokens >= 0, window and pageSize >= 1)");
		}
		int pages = (tokens + pageSize - 1) / pageSize;
		int first = Math.max(0, tokens - window) / pageSize;
		return new int[] { first, pages - first };
	}
}
