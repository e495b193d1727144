package io.kvferry.bootstrap;

/**
 * A prefill instance's sizes as the bootstrap server answers {@code GET /route} with all three values −1.
 *
 * @param attnTpSize prefill attention TP size
 * @param dpSize prefill DP size
 * @param ppSize prefill PP size
 * @param pageSize prefill page size
 */
public record PrefillParallelInfo(int attnTpSize, int dpSize, int ppSize, int pageSize) {

	public PrefillParallelInfo {
		if (attnTpSize < 1 || dpSize < 1 || ppSize < 1 || pageSize < 1) {
			throw new IllegalArgumentException("prefill parallel info : tp=" + attnTpSize + " dp=" + dpSize + " pp="
					+ ppSize + " page_size=" + pageSize + " (expected: all >= 1)");
		}
	}
}
