package io.kvferry.harness;

/**
 * The KV shape of a model as far as transfer cares.
 *
 * @param layers model layers
 * @param kvHeads total KV heads (ignored for MLA, whose latent buffer is replicated on every rank)
 * @param headDim elements per head (for MLA: elements of the latent vector)
 * @param dtypeBytes bytes per element (2 for bf16)
 * @param pageSize tokens per page
 * @param mla MLA latent buffers (one per layer) instead of K and V
 * @param draftLayers extra draft-model layers held by decode only (speculative decoding without a prefill draft)
 * @param auxItemLen bytes of one aux row (0: no aux buffer)
 * @param stateItemLen bytes of one state slot (0: no state buffer); with {@code mambaUnits}, bytes of one unit of
 *        the TP-sharded state dimension
 * @param mambaUnits 0 for one untyped state buffer; else a hybrid model with two Mamba state tensors whose
 *        TP-sharded dimension has this many units in the model (a rank at TP t holds {@code mambaUnits / t} of them)
 */
public record ModelShape(int layers, int kvHeads, int headDim, int dtypeBytes, int pageSize, boolean mla,
		int draftLayers, int auxItemLen, int stateItemLen, int mambaUnits) {

	/** Mamba state tensors of a hybrid shape. */
	public static final int MAMBA_TENSORS = 2;

	/** A shape without Mamba state. */
	public ModelShape(int layers, int kvHeads, int headDim, int dtypeBytes, int pageSize, boolean mla,
			int draftLayers, int auxItemLen, int stateItemLen) {
		this(layers, kvHeads, headDim, dtypeBytes, pageSize, mla, draftLayers, auxItemLen, stateItemLen, 0);
	}

	public ModelShape {
		if (layers < 1 || kvHeads < 1 || headDim < 1 || dtypeBytes < 1 || pageSize < 1 || draftLayers < 0
				|| auxItemLen < 0 || stateItemLen < 0) {
			throw new IllegalArgumentException("model shape : " + layers + " layers, " + kvHeads + " heads, dim "
					+ headDim + ", " + dtypeBytes + " B, page " + pageSize + " (expected: all >= 1)");
		}
		if ((headDim * dtypeBytes) % 8 != 0) {
			throw new IllegalArgumentException("headDim * dtypeBytes : " + headDim * dtypeBytes
					+ " (expected: a multiple of 8)");
		}
		if (mambaUnits < 0 || (mambaUnits > 0 && stateItemLen == 0)) {
			throw new IllegalArgumentException("mambaUnits : " + mambaUnits + " with stateItemLen " + stateItemLen
					+ " (expected: >= 0, and a unit size when > 0)");
		}
		if (auxItemLen % 8 != 0 || stateItemLen % 8 != 0) {
			throw new IllegalArgumentException("aux/state item lengths : " + auxItemLen + "/" + stateItemLen
					+ " (expected: multiples of 8)");
		}
	}

	/** Llama-3-8B: 32 layers, 8 KV heads of 128, bf16, page 16 (32 KiB per page per layer buffer at TP 1). */
	public static ModelShape llama3_8b() {
		return new ModelShape(32, 8, 128, 2, 16, false, 0, 64, 0);
	}

	/** @return bytes of one head of one token */
	public int headBytes() {
		return headDim * dtypeBytes;
	}

	/** @return heads a rank holds at attention TP {@code tp} (1 for MLA; replicated when tp > kvHeads) */
	public int headsPerRank(int tp) {
		return mla ? 1 : Math.max(1, kvHeads / tp);
	}

	/** @return bytes of one page of one layer buffer on a rank at attention TP {@code tp} */
	public int itemLen(int tp) {
		return pageSize * headsPerRank(tp) * headBytes();
	}

	/**
	 * @param tp the rank's attention TP size
	 * @param tpRank its rank
	 * @param position head position within the rank
	 * @return the model head stored there
	 */
	public int modelHead(int tp, int tpRank, int position) {
		if (mla) {
			return 0;
		}
		if (tp <= kvHeads) {
			return tpRank * headsPerRank(tp) + position;
		}
		// More ranks than heads: each head is replicated on tp / kvHeads consecutive ranks.
		return tpRank / (tp / kvHeads);
	}

	/** @return a copy with another number of layers */
	public ModelShape withLayers(int n) {
		return new ModelShape(n, kvHeads, headDim, dtypeBytes, pageSize, mla, draftLayers, auxItemLen, stateItemLen,
				mambaUnits);
	}

	/** @return a copy with another page size (1: each token of each layer buffer is its own page, as SGLang's default) */
	public ModelShape withPageSize(int tokens) {
		return new ModelShape(layers, kvHeads, headDim, dtypeBytes, tokens, mla, draftLayers, auxItemLen, stateItemLen,
				mambaUnits);
	}

	/** @return a copy with draft layers on decode */
	public ModelShape withDraftLayers(int n) {
		return new ModelShape(layers, kvHeads, headDim, dtypeBytes, pageSize, mla, n, auxItemLen, stateItemLen,
				mambaUnits);
	}

	/** @return a copy with that state slot size (0: none) */
	public ModelShape withStateItemLen(int n) {
		return new ModelShape(layers, kvHeads, headDim, dtypeBytes, pageSize, mla, draftLayers, auxItemLen, n,
				mambaUnits);
	}

	/**
	 * @param units units of the TP-sharded state dimension in the model
	 * @param unitBytes bytes of one unit (a multiple of 8)
	 * @return a hybrid copy with two Mamba state tensors
	 */
	public ModelShape withMamba(int units, int unitBytes) {
		return new ModelShape(layers, kvHeads, headDim, dtypeBytes, pageSize, mla, draftLayers, auxItemLen, unitBytes,
				units);
	}

	/** @return Mamba units a rank at attention TP {@code tp} holds */
	public int mambaUnitsPerRank(int tp) {
		if (mambaUnits % tp != 0) {
			throw new IllegalArgumentException("mambaUnits : " + mambaUnits + " (expected: a multiple of TP " + tp
					+ ")");
		}
		return mambaUnits / tp;
	}
}
