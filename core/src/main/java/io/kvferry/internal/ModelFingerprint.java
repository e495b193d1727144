package io.kvferry.internal;

import io.kvferry.KVLayout;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionLayout;

/**
 * What the two ranks of a session must agree on about the model whatever their parallel layouts, read from the layout
 * each announces in the handshake: the model's id, its layers, its KV heads, the bytes of one head of one token, the
 * dtype, MLA and the KV layout. Values that legitimately differ between prefill and decode (heads and layers per rank
 * under other TP and PP sizes, page sizes, draft layers on one side) are not in it: the topology planner judges
 * them. A value a rank cannot know (an undeclared id, the layers of a model split over PP stages it did not declare,
 * a head size its items do not divide into) is 0 or empty and compared with nothing.
 *
 * @param modelId the engine's name of the model and its revision, or empty
 * @param layers main-model layers over every PP stage, or 0 when unknown
 * @param totalKvHeads KV heads of the model
 * @param kHeadBytes bytes of one head of one token in a K buffer (MLA: of the latent), or 0 when unknown
 * @param vHeadBytes the same in a V buffer (0 with MLA, or when unknown)
 * @param dtype the KV cache dtype tag
 * @param mla whether the KV buffers are MLA latent buffers
 * @param kvLayout how a KV page's bytes are ordered (named, not compared)
 */
record ModelFingerprint(String modelId, int layers, int totalKvHeads, int kHeadBytes, int vHeadBytes, String dtype,
		boolean mla, KVLayout kvLayout) {

	/** @return the fingerprint of a rank's announced layout */
	static ModelFingerprint of(PeerLayout l) {
		int regions = l.kv().size();
		int perList = l.mla() ? regions : regions / 2;
		int ownLayers = perList - l.draftLayers();
		// Without PP the rank holds every layer; with PP only a declared count says how many the model has.
		int layers = l.modelLayers() > 0 ? l.modelLayers()
				: l.parallel().ppSize() == 1 && (l.mla() || regions % 2 == 0) && ownLayers > 0 ? ownLayers : 0;
		int k = regions == 0 ? 0 : headBytes(l, l.kv().get(0));
		int v = l.mla() || regions < 2 ? 0 : headBytes(l, l.kv().get(perList));
		return new ModelFingerprint(l.modelId(), layers, l.totalKvHeadNum(), k, v, l.dtype(), l.mla(), l.kvLayout());
	}

	private static int headBytes(PeerLayout l, RegionLayout region) {
		long perHead = (long) l.pageSize() * l.kvHeadNum();
		return region.itemLen() % perHead == 0 ? (int) (region.itemLen() / perHead) : 0;
	}

	/**
	 * @return why a prefill rank of {@code prefill}'s model cannot serve a decode rank of {@code decode}'s, naming the
	 *         first value that differs on both sides and then both fingerprints; null when nothing known differs
	 */
	static String mismatch(ModelFingerprint prefill, ModelFingerprint decode) {
		String field = null;
		Object p = null;
		Object d = null;
		if (!prefill.modelId.isEmpty() && !decode.modelId.isEmpty() && !prefill.modelId.equals(decode.modelId)) {
			field = "model id";
			p = prefill.modelId;
			d = decode.modelId;
		}
		else if (prefill.layers > 0 && decode.layers > 0 && prefill.layers != decode.layers) {
			field = "model layer count";
			p = prefill.layers;
			d = decode.layers;
		}
		else if (!prefill.dtype.equals(decode.dtype)) {
			field = "KV cache dtype";
			p = prefill.dtype;
			d = decode.dtype;
		}
		else if (prefill.mla != decode.mla) {
			field = "MLA";
			p = prefill.mla;
			d = decode.mla;
		}
		else if (prefill.totalKvHeads != decode.totalKvHeads) {
			field = "model KV head count";
			p = prefill.totalKvHeads;
			d = decode.totalKvHeads;
		}
		else if (differs(prefill.kHeadBytes, decode.kHeadBytes) || differs(prefill.vHeadBytes, decode.vHeadBytes)) {
			field = "bytes per head and token (K/V)";
			p = prefill.kHeadBytes + "/" + prefill.vHeadBytes;
			d = decode.kHeadBytes + "/" + decode.vHeadBytes;
		}
		if (field == null) {
			return null;
		}
		return field + " mismatch: prefill " + p + ", decode " + d + " (the two ranks hold different models: prefill "
				+ prefill + "; decode " + decode + ")";
	}

	private static boolean differs(int a, int b) {
		return a > 0 && b > 0 && a != b;
	}

	@Override
	public String toString() {
		String named = modelId.isEmpty() ? "" : "model " + modelId + ", ";
		return named + (layers == 0 ? "" : layers + (layers == 1 ? " layer, " : " layers, "))
				+ totalKvHeads + " KV heads of " + kHeadBytes + "/" + vHeadBytes + " bytes per token, " + dtype
				+ (mla ? ", MLA" : "") + ", " + kvLayout;
	}
}
