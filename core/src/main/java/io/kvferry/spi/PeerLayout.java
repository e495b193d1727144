package io.kvferry.spi;

import java.util.List;
import java.util.Objects;

import io.kvferry.KVArgs;
import io.kvferry.KVLayout;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.StateKind;

/**
 * A rank's KV layout as exchanged in the handshake: SGLang's KV-args registration without addresses.
 *
 * @param engineRank the rank's engine rank
 * @param parallel its parallel layout
 * @param pageSize tokens per page
 * @param mla whether KV buffers are MLA latent buffers
 * @param dtype KV cache dtype tag
 * @param kvHeadNum KV heads on this rank
 * @param totalKvHeadNum KV heads of the model
 * @param startLayer first layer of this PP stage
 * @param draftLayers draft-model layers at the end of the KV list
 * @param kv KV regions, in SGLang order
 * @param aux aux regions
 * @param state state regions
 * @param stateKinds the kind of each state region (empty: undeclared)
 * @param stateTpDims the TP-sharded dimension of each state region on this rank (empty: undeclared)
 * @param allCpRanksTransfer prefill with CP: every CP rank sends its share of a room's pages
 * @param dsaCacheLayerSplit prefill with CP: the KV layers are split across CP ranks
 * @param modelId the engine's name of the model and its revision, or empty for none
 * @param modelLayers main-model layers over every PP stage, or 0 when undeclared
 * @param kvLayout how the bytes of a KV page are ordered
 */
public record PeerLayout(int engineRank, ParallelLayout parallel, int pageSize, boolean mla, String dtype,
		int kvHeadNum, int totalKvHeadNum, int startLayer, int draftLayers, List<RegionLayout> kv, List<RegionLayout> aux,
		List<RegionLayout> state, List<StateKind> stateKinds, List<Integer> stateTpDims, boolean allCpRanksTransfer,
		boolean dsaCacheLayerSplit, String modelId, int modelLayers, KVLayout kvLayout) {

	/**
	 * Most ranks an instance may have (the product of the parallel sizes), and the largest page size in tokens, head
	 * count and layer index or count a layout may name: far above any model or deployment, low enough that nothing
	 * sized by them is large.
	 */
	public static final int MAX_SIZE = 1 << 16;

	/** Most regions in each of the three lists: 4,096 layers of K and V buffers. */
	public static final int MAX_REGIONS = 8192;

	/** Longest {@link #dtype()}, in bytes of UTF-8. */
	public static final int MAX_DTYPE_BYTES = 64;

	/** Longest {@link #modelId()}, in bytes of UTF-8. */
	public static final int MAX_MODEL_ID_BYTES = 256;

	public PeerLayout {
		Objects.requireNonNull(parallel, "parallel");
		Objects.requireNonNull(dtype, "dtype");
		Objects.requireNonNull(modelId, "modelId");
		Objects.requireNonNull(kvLayout, "kvLayout");
		if (engineRank < 0 || pageSize < 1 || pageSize > MAX_SIZE || kvHeadNum < 1 || kvHeadNum > totalKvHeadNum
				|| totalKvHeadNum > MAX_SIZE || startLayer < 0 || startLayer >= MAX_SIZE || draftLayers < 0
				|| draftLayers > MAX_SIZE || modelLayers < 0 || modelLayers > MAX_SIZE) {
			throw new IllegalArgumentException("peer layout : engineRank=" + engineRank + " pageSize=" + pageSize
					+ " kvHeads=" + kvHeadNum + "/" + totalKvHeadNum + " startLayer=" + startLayer + " draftLayers="
					+ draftLayers + " modelLayers=" + modelLayers + " (expected: engineRank >= 0, pageSize 1.."
					+ MAX_SIZE + ", kvHeads 1..total.." + MAX_SIZE + ", layers 0.." + MAX_SIZE + ")");
		}
		checkSizes(parallel);
		kv = regions("kv", kv);
		aux = regions("aux", aux);
		state = regions("state", state);
		stateKinds = List.copyOf(stateKinds);
		stateTpDims = List.copyOf(stateTpDims);
		if (!stateKinds.isEmpty() && stateKinds.size() != state.size()
				|| !stateTpDims.isEmpty() && stateTpDims.size() != state.size()) {
			throw new IllegalArgumentException("peer layout : " + stateKinds.size() + " state kinds and "
					+ stateTpDims.size() + " state TP dims for " + state.size() + " state regions (expected: one "
					+ "each per state region, or none)");
		}
		for (int dim : stateTpDims) {
			if (dim < 1) {
				throw new IllegalArgumentException("peer layout : stateTpDims " + stateTpDims + " (expected: >= 1)");
			}
		}
		Texts.check("dtype", dtype, MAX_DTYPE_BYTES);
		Texts.check("modelId", modelId, MAX_MODEL_ID_BYTES);
	}

	/** A layout of an unnamed model, without declared model layers, token-major. */
	public PeerLayout(int engineRank, ParallelLayout parallel, int pageSize, boolean mla, String dtype,
			int kvHeadNum, int totalKvHeadNum, int startLayer, int draftLayers, List<RegionLayout> kv,
			List<RegionLayout> aux, List<RegionLayout> state, List<StateKind> stateKinds, List<Integer> stateTpDims,
			boolean allCpRanksTransfer, boolean dsaCacheLayerSplit) {
		this(engineRank, parallel, pageSize, mla, dtype, kvHeadNum, totalKvHeadNum, startLayer, draftLayers, kv, aux,
				state, stateKinds, stateTpDims, allCpRanksTransfer, dsaCacheLayerSplit, "", 0, KVLayout.NHD);
	}

	/** A layout without state kinds and without context-parallel transfer options. */
	public PeerLayout(int engineRank, ParallelLayout parallel, int pageSize, boolean mla, String dtype, int kvHeadNum,
			int totalKvHeadNum, int startLayer, int draftLayers, List<RegionLayout> kv, List<RegionLayout> aux,
			List<RegionLayout> state) {
		this(engineRank, parallel, pageSize, mla, dtype, kvHeadNum, totalKvHeadNum, startLayer, draftLayers, kv, aux,
				state, List.of(), List.of(), false, false);
	}

	/** @return the layout of {@code args} on a rank placed at {@code parallel}, without CP transfer options */
	public static PeerLayout of(KVArgs args, ParallelLayout parallel) {
		return of(args, parallel, false, false);
	}

	/** @return the layout of {@code args} on a rank placed at {@code parallel} */
	public static PeerLayout of(KVArgs args, ParallelLayout parallel, boolean allCpRanksTransfer,
			boolean dsaCacheLayerSplit) {
		return new PeerLayout(args.engineRank(), parallel, args.pageSize(), args.isMla(), args.dtype(),
				args.kvHeadNum(), args.totalKvHeadNum(), args.prefillStartLayer(), args.draftLayers(), shapes(args.kvRegions()),
				shapes(args.auxRegions()), shapes(args.stateRegions()), args.stateKinds(), args.stateTpDims(),
				allCpRanksTransfer, dsaCacheLayerSplit, args.modelId(), args.modelLayers(), args.kvLayout());
	}

	/** @return whether decode pulls from every CP rank of this prefill rank's instance (not only CP rank 0) */
	public boolean transfersFromAllCpRanks() {
		return parallel.attnCpSize() > 1 && (allCpRanksTransfer || dsaCacheLayerSplit);
	}

	/** @return the regions of one kind */
	public List<RegionLayout> regions(RegionKind kind) {
		switch (kind) {
			case KV:
				return kv;
			case AUX:
				return aux;
			default:
				return state;
		}
	}

	private static void checkSizes(ParallelLayout p) {
		// The product bounds each size too: what a peer plans for the instance is sized by its ranks.
		long ranks = (long) p.attnTpSize() * p.attnDpSize() * p.systemDpSize() * p.ppSize() * p.attnCpSize();
		if (ranks > MAX_SIZE) {
			throw new IllegalArgumentException("peer layout : parallel sizes " + p + " make " + ranks + " ranks "
					+ "(expected: at most " + MAX_SIZE + ")");
		}
	}

	private static List<RegionLayout> regions(String list, List<RegionLayout> regions) {
		if (regions.size() > MAX_REGIONS) {
			throw new IllegalArgumentException("peer layout : " + regions.size() + " " + list + " regions (expected: "
					+ "at most " + MAX_REGIONS + ")");
		}
		return List.copyOf(regions);
	}

	private static List<RegionLayout> shapes(List<MemoryRegion> regions) {
		return regions.stream().map(r -> new RegionLayout(r.itemLen(), r.itemCount())).toList();
	}
}
