package io.kvferry.spi;

/**
 * The shape of one registered region as a peer sees it: no address crosses the wire, only item length and count.
 *
 * @param itemLen bytes per item
 * @param itemCount items in the region, at most {@link #MAX_ITEMS}
 */
public record RegionLayout(int itemLen, long itemCount) {

	/** Most items a region may have: every item is named by an {@code i32} index (a page, an aux row, a slot). */
	public static final long MAX_ITEMS = 1L << 31;

	public RegionLayout {
		if (itemLen <= 0 || itemCount <= 0 || itemCount > MAX_ITEMS) {
			throw new IllegalArgumentException("region layout : itemLen=" + itemLen + " itemCount=" + itemCount
					+ " (expected: both > 0, itemCount at most " + MAX_ITEMS + ")");
		}
	}
}
