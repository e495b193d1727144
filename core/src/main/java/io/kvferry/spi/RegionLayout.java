package io.kvferry.spi;

/**
 * The shape of one registered region as a peer sees it: no address crosses the wire, only item length and count.
 *
 * @param itemLen bytes per item
 * @param itemCount items in the region
 */
public record RegionLayout(int itemLen, long itemCount) {

	public RegionLayout {
		if (itemLen <= 0 || itemCount <= 0) {
			throw new IllegalArgumentException("region layout : itemLen=" + itemLen + " itemCount=" + itemCount
					+ " (expected: both > 0)");
		}
	}
}
