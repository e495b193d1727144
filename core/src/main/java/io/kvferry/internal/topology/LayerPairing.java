package io.kvferry.internal.topology;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.TopologyException;

/**
 * Pairs the positions of a prefill rank's KV regions with the decode rank's, as SGLang's
 * {@code get_mha_kv_ptrs_with_pp} and {@code get_mla_kv_ptrs_with_pp} do. Positions, not addresses: the caller adds
 * page offsets to each region's 64-bit base (see {@link PageRun#srcOffset(int)}). Stateless and thread-safe.
 *
 * <p>MHA lists hold all K buffers then all V buffers (then draft K and V); a prefill PP stage lists only its own
 * layers, starting at model layer {@code prefillStartLayer}. With n prefill layers and L decode layers (half of each
 * list):
 * <ul>
 * <li>n == L: position by position (K half with K half, V half with V half);</li>
 * <li>n &lt; L and L not a multiple of n (decode holds draft-model layers that prefill lacks): K to decode positions
 * {@code [start, start+n)}, V to {@code [n·⌊L/n⌋ + start, …)}, SGLang's {@code multiplier_ratio} rule;</li>
 * <li>otherwise (decode PP 1 against prefill PP stages): K to {@code [start, start+n)}, V to
 * {@code [L + start, L + start + n)}.</li>
 * </ul>
 * MLA lists hold one buffer per layer: equal counts pair 1:1, else prefill's go to {@code [start, start+n)}.
 *
 * <p>Like SGLang's, {@link #pair} guesses from the counts alone. The guess is right for equal lists, for decode PP 1
 * against stages of equal size, and for a decode with fewer draft layers than a stage has; it pairs V buffers wrongly
 * for MHA stages of unequal size (a layer count not a multiple of the stage's looks like draft layers) and for a
 * decode with at least as many draft layers as a stage has layers. {@link #pairByLayer} pairs by model layer instead, when both sides' start layers and
 * draft layer counts are known.
 */
public final class LayerPairing {

	private LayerPairing() {
	}

	/**
	 * Pairs as SGLang does, from the counts and the prefill start layer alone (rules in the class comment).
	 *
	 * @param srcRegionCount prefill KV region count (MHA: 2 × the stage's layers; MLA: the stage's layers)
	 * @param dstRegionCount decode KV region count (may include draft-model layers)
	 * @param prefillStartLayer first model layer of the prefill PP stage
	 * @param mla whether both lists hold MLA latent buffers (one per layer)
	 * @return the pairs; MHA: the K pairs in layer order, then the V pairs; MLA: one pair per layer
	 * @throws TopologyException when a list cannot be paired (an odd MHA count, no prefill region) or a decode position
	 *         would fall outside the decode list or the K/V half it belongs to
	 * @throws IllegalArgumentException for a negative count or start layer
	 */
	public static List<RegionPair> pair(int srcRegionCount, int dstRegionCount, int prefillStartLayer, boolean mla) {
		checkNonNegative("srcRegionCount", srcRegionCount);
		checkNonNegative("dstRegionCount", dstRegionCount);
		checkNonNegative("prefillStartLayer", prefillStartLayer);
		if (srcRegionCount == 0) {
			throw new TopologyException("prefill KV region count is 0 (expected: at least one layer)");
		}
		return mla ? pairMla(srcRegionCount, dstRegionCount, prefillStartLayer)
				: pairMha(srcRegionCount, dstRegionCount, prefillStartLayer);
	}

	/**
	 * Pairs by model layer: prefill layer {@code l} goes to the decode region of layer {@code l}, and draft layer
	 * {@code j} to decode draft layer {@code j}. Unlike {@link #pair} this needs no guess, so it is right for stages of
	 * any size, decode PP 1 or equal, and any number of draft layers.
	 *
	 * @param prefill the prefill stage's list (draft layers: 0, or as many as the decode's)
	 * @param decode the decode rank's list ({@code startLayer} 0 with decode PP 1)
	 * @param mla whether both lists hold MLA buffers (one per layer)
	 * @return the pairs in prefill list order: MHA main K, main V, draft K, draft V; MLA main, then draft
	 * @throws TopologyException when a prefill layer is not in the decode list, the draft layer counts differ, the
	 *         prefill list is empty or a count does not fit its layout
	 */
	public static List<RegionPair> pairByLayer(LayerSpan prefill, LayerSpan decode, boolean mla) {
		Objects.requireNonNull(prefill, "prefill");
		Objects.requireNonNull(decode, "decode");
		if (prefill.regionCount() == 0) {
			throw new TopologyException("prefill KV region count is 0 (expected: at least one layer)");
		}
		int np = prefill.mainLayers(mla);
		int nd = decode.mainLayers(mla);
		long first = (long) prefill.startLayer() - decode.startLayer();
		if (np > 0 && (first < 0 || first + np > nd)) {
			throw new TopologyException("prefill layers " + prefill.startLayer() + ".."
					+ (prefill.startLayer() + np - 1L) + " are not all in the decode list of layers "
					+ decode.startLayer() + ".." + (decode.startLayer() + nd - 1L)
					+ " (expected: decode PP 1 or equal to prefill's)");
		}
		int draft = prefill.draftLayers();
		if (draft != 0 && draft != decode.draftLayers()) {
			throw new TopologyException("prefill has " + draft + " draft layers, decode " + decode.draftLayers()
					+ " (expected: the same, or none on prefill)");
		}
		int offset = (int) first;
		List<RegionPair> pairs = new ArrayList<>(prefill.regionCount());
		int halves = mla ? 1 : 2;
		// MHA: h = 0 pairs the K buffers, h = 1 the V buffers, each half of a list holding its main layers.
		for (int h = 0; h < halves; h++) {
			for (int i = 0; i < np; i++) {
				pairs.add(new RegionPair(h * np + i, h * nd + offset + i));
			}
		}
		for (int h = 0; h < halves; h++) {
			for (int j = 0; j < draft; j++) {
				pairs.add(new RegionPair(halves * np + h * draft + j, halves * nd + h * draft + j));
			}
		}
		return pairs;
	}

	/**
	 * Checks a pairing in which the prefill rank is the only one that fills the decode rank's layers, as when both sides
	 * run the same PP size (decode PP 1 asks every prefill stage, and each stage fills only its own layers): the prefill
	 * list must hold the decode list's main layers, all of them. {@link #pairByLayer} accepts a prefill list that holds
	 * only some, which with a single source would leave the other layers' buffers never written.
	 *
	 * @throws TopologyException naming both sides' layers when they differ, or when a count does not fit its layout
	 */
	public static void checkSameLayers(LayerSpan prefill, LayerSpan decode, boolean mla) {
		int np = prefill.mainLayers(mla);
		int nd = decode.mainLayers(mla);
		if (np != nd || prefill.startLayer() != decode.startLayer()) {
			throw new TopologyException("prefill holds layers " + range(prefill.startLayer(), np) + ", decode "
					+ range(decode.startLayer(), nd) + " (expected: the same layers when both sides run the same PP "
					+ "size, as this prefill rank is the only one that fills decode's)");
		}
	}

	/** @return layers {@code start .. start + n - 1} as text, or "none" */
	public static String range(int start, int n) {
		return n == 0 ? "none" : start + ".." + (start + n - 1L) + " (" + n + " layers)";
	}

	private static List<RegionPair> pairMla(int n, int dstCount, int start) {
		// Equal counts pair 1:1 whatever the start layer, as SGLang does.
		int dstStart = n == dstCount ? 0 : start;
		checkRange("MLA", dstStart, n, 0, dstCount, n, dstCount, start);
		List<RegionPair> pairs = new ArrayList<>(n);
		for (int i = 0; i < n; i++) {
			pairs.add(new RegionPair(i, dstStart + i));
		}
		return pairs;
	}

	private static List<RegionPair> pairMha(int srcCount, int dstCount, int start) {
		if (srcCount % 2 != 0 || dstCount % 2 != 0) {
			throw new TopologyException("MHA KV region counts prefill=" + srcCount + " decode=" + dstCount
					+ " (expected: even counts, K buffers then V buffers)");
		}
		int n = srcCount / 2;
		int l = dstCount / 2;
		int kStart;
		int vOffset;
		if (n == l) {
			kStart = 0;
			vOffset = l;
		}
		else if (n < l && l % n != 0) {
			// Decode has draft-model layers after its V buffers; SGLang's multiplier_ratio locates the main V half.
			kStart = start;
			vOffset = n * (l / n);
		}
		else {
			kStart = start;
			vOffset = l;
		}
		checkRange("MHA K", kStart, n, 0, vOffset, srcCount, dstCount, start);
		checkRange("MHA V", (long) vOffset + kStart, n, vOffset, dstCount, srcCount, dstCount, start);
		int vStart = vOffset + kStart;
		List<RegionPair> pairs = new ArrayList<>(srcCount);
		for (int i = 0; i < n; i++) {
			pairs.add(new RegionPair(i, kStart + i));
		}
		for (int i = 0; i < n; i++) {
			pairs.add(new RegionPair(n + i, vStart + i));
		}
		return pairs;
	}

	// Decode positions [first, first + n) must lie in [lo, hi); long arithmetic so huge starts cannot wrap.
	private static void checkRange(String what, long first, int n, int lo, int hi, int srcCount, int dstCount,
			int start) {
		if (first < lo || first + n > hi) {
			throw new TopologyException(what + " regions of prefill (count=" + srcCount + ", start layer=" + start
					+ ") map to decode positions " + first + ".." + (first + n - 1) + ", outside " + lo + ".."
					+ (hi - 1) + " of the decode list (count=" + dstCount
					+ ") (expected: decode PP 1 or equal to prefill's, and matching layer counts)");
		}
	}

	private static void checkNonNegative(String name, int value) {
		if (value < 0) {
			throw new IllegalArgumentException(name + " : " + value + " (expected: >= 0)");
		}
	}
}
