package io.kvferry.bootstrap;

import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import io.kvferry.internal.topology.RankMapping;

/**
 * A prefill instance's sizes as the bootstrap server answers {@code GET /route} with all three values −1.
 *
 * @param attnTpSize prefill attention TP size
 * @param dpSize prefill DP size
 * @param ppSize prefill PP size
 * @param pageSize prefill page size
 */
public record PrefillParallelInfo(int attnTpSize, int dpSize, int ppSize, int pageSize) {

	/**
	 * Most ranks an instance may have (TP × DP × PP), and the largest page size: the bootstrap server's answer sizes
	 * what decode plans for the instance (one target per rank it pulls from), so it is bounded as a peer's handshake is.
	 */
	public static final int MAX_RANKS = 1 << 16;

	public PrefillParallelInfo {
		if (attnTpSize < 1 || dpSize < 1 || ppSize < 1 || pageSize < 1 || pageSize > MAX_RANKS
				|| (long) attnTpSize * dpSize * ppSize > MAX_RANKS) {
			throw new IllegalArgumentException("prefill parallel info : tp=" + attnTpSize + " dp=" + dpSize + " pp="
					+ ppSize + " page_size=" + pageSize + " (expected: all >= 1, tp × dp × pp and page_size at most "
					+ MAX_RANKS + ")");
		}
	}

	/**
	 * Checks that decode ranks of this layout can pull KV from this instance, by the rules a decode manager applies
	 * when it first meets it, so that a launcher or a router can refuse the pair before anything starts.
	 *
	 * @param decode a decode rank's layout (its attention TP size, PP size and PP rank are used)
	 * @param decodePageSize the decode's page size
	 * @param mla whether the KV cache is MLA (latent KV replicated on every TP rank)
	 * @throws TopologyException naming both values when the TP sizes do not divide each other, the PP sizes are
	 *         neither equal nor decode 1, the page sizes differ without both being powers of two, or the decode layout
	 *         has context parallelism
	 */
	public void checkDecode(ParallelLayout decode, int decodePageSize, boolean mla) {
		RankMapping.plan(this, decode, 0, decodePageSize, mla);
	}
}
