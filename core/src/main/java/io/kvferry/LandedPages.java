package io.kvferry;

import java.util.Arrays;
import java.util.BitSet;
import java.util.Objects;

/**
 * Which destination pages of a failed room landed whole on a decode rank, so that the engine recomputes only the rest
 * (vLLM's {@code kv_load_failure_policy = recompute}). Taken from decode's own ledger of the bytes that landed, never
 * from what prefill reported: a page counts as landed only when every byte of it, in every KV buffer the room fills
 * (MHA: each layer's K and V buffer), landed exactly as often as the room's plan writes it (once, unless several
 * prefill ranks write the same replicated heads). A page with one byte missing, or written by a frame that was cut off,
 * is not landed. {@link #landed(int)} answers the same per layer, for engines that load layer by layer.
 *
 * <p>Pages are named as the engine named them in {@link KVReceiver#sendMetadata}: the destination pages after any
 * prefix decode already held, in the order given. The prefill side has no such record: its failures carry
 * {@link #NONE}, where {@link #isKnown()} is false and every list is empty.
 *
 * <pre>{@code
 * receiver.completion().subscribe(null, err -> {
 *     LandedPages landed = ((KVTransferException) err).landedPages();
 *     engine.recompute(request, landed.missing());   // keeps landed.landed()
 * });
 * }</pre>
 *
 * <p>Immutable; every array returned is a fresh copy.
 */
public final class LandedPages {

	/** Not applicable: a prefill-side failure, or a failure made outside a room's receiver. */
	public static final LandedPages NONE = new LandedPages(false, new int[0], new BitSet[0]);

	private static final int SHOWN = 8;

	private final boolean known;
	private final int[] requested;
	// Per layer, the positions in requested whose page landed whole in that layer.
	private final BitSet[] perLayer;
	private final BitSet all;

	private LandedPages(boolean known, int[] requested, BitSet[] perLayer) {
		this.known = known;
		this.requested = requested;
		this.perLayer = perLayer;
		BitSet every = new BitSet();
		if (perLayer.length > 0) {
			every.set(0, requested.length);
			for (BitSet layer : perLayer) {
				every.and(layer);
			}
		}
		this.all = every;
	}

	/**
	 * Decode's record of a room.
	 *
	 * @param requested the destination pages the room asked for, in order
	 * @param landedPerLayer per layer of the rank, the positions in {@code requested} whose page landed whole there
	 * @return the record
	 */
	public static LandedPages of(int[] requested, BitSet[] landedPerLayer) {
		Objects.requireNonNull(requested, "requested");
		Objects.requireNonNull(landedPerLayer, "landedPerLayer");
		BitSet[] copy = new BitSet[landedPerLayer.length];
		for (int l = 0; l < copy.length; l++) {
			copy[l] = (BitSet) Objects.requireNonNull(landedPerLayer[l], "landedPerLayer[" + l + "]").clone();
			if (copy[l].length() > requested.length) {
				throw new IllegalArgumentException("landedPerLayer[" + l + "] : " + copy[l] + " (expected: positions "
						+ "below " + requested.length + ")");
			}
		}
		return new LandedPages(true, requested.clone(), copy);
	}

	/** @return whether this side keeps a record at all: true on decode, false for {@link #NONE} */
	public boolean isKnown() {
		return known;
	}

	/** @return the destination pages the room asked for, in the order given; empty when it asked for none yet */
	public int[] requested() {
		return requested.clone();
	}

	/**
	 * @return layers the room fills in the decode rank's KV buffers (main-model, then the draft layers prefill fills;
	 *         a decode-only draft model's are not among them); 0 for {@link #NONE}
	 */
	public int layers() {
		return perLayer.length;
	}

	/** @return the requested pages that landed whole in every layer, in requested order */
	public int[] landed() {
		return pick(all, true);
	}

	/** @return the requested pages that did not land whole in some layer, in requested order: those to recompute */
	public int[] missing() {
		return pick(all, false);
	}

	/**
	 * @param layer a layer of the decode rank, {@code 0 .. layers() - 1}
	 * @return the requested pages whose every byte of that layer landed, in requested order
	 */
	public int[] landed(int layer) {
		return pick(layer(layer), true);
	}

	/**
	 * @param layer a layer of the decode rank, {@code 0 .. layers() - 1}
	 * @return the requested pages that did not land whole in that layer, in requested order
	 */
	public int[] missing(int layer) {
		return pick(layer(layer), false);
	}

	private BitSet layer(int layer) {
		if (layer < 0 || layer >= perLayer.length) {
			throw new IllegalArgumentException("layer : " + layer + " (expected: 0.." + (perLayer.length - 1) + ")");
		}
		return perLayer[layer];
	}

	private int[] pick(BitSet set, boolean in) {
		int[] out = new int[requested.length];
		int n = 0;
		for (int i = 0; i < requested.length; i++) {
			if (set.get(i) == in) {
				out[n++] = requested[i];
			}
		}
		return Arrays.copyOf(out, n);
	}

	@Override
	public String toString() {
		if (!known) {
			return "LandedPages{not applicable}";
		}
		int[] missing = missing();
		return "LandedPages{" + (requested.length - missing.length) + " of " + requested.length + " landed"
				+ (missing.length == 0 ? "" : ", missing " + head(missing)) + '}';
	}

	private static String head(int[] pages) {
		String shown = Arrays.toString(Arrays.copyOf(pages, Math.min(SHOWN, pages.length)));
		return pages.length > SHOWN ? shown.substring(0, shown.length() - 1) + ", ...]" : shown;
	}
}
