package io.kvferry.internal.topology;

/**
 * A prefill KV region paired with the decode KV region its pages go to, both given as positions in the sides' KV
 * region lists. Immutable.
 *
 * @param src position in the prefill rank's KV region list
 * @param dst position in the decode rank's KV region list
 */
public record RegionPair(int src, int dst) {

	/**
	 * @throws IllegalArgumentException when a position is negative
	 */
	public RegionPair {
		if (src < 0) {
			throw new IllegalArgumentException("src : " + src + " (expected: >= 0)");
		}
		if (dst < 0) {
			throw new IllegalArgumentException("dst : " + dst + " (expected: >= 0)");
		}
	}
}
