package io.kvferry.spi;

import java.util.List;
import java.util.Objects;

import io.kvferry.KVArgs;
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
 */
public record PeerLayout(int engineRank, ParallelLayout parallel, int pageSize, boolean mla, String dtype,
		int kvHeadNum, int totalKvHeadNum, int startLayer, int draftLayers, List<RegionLayout> kv, List<RegionLayout> aux,
		List<RegionLayout> state, List<StateKind> stateKinds, List<Integer> stateTpDims, boolean allCpRanksTransfer,
		boolean dsaCacheLayerSplit) {

	public PeerLayout {
		Objects.requireNonNull(parallel, "parallel");
		Objects.requireNonNull(dtype, "dtype");
		if (pageSize < 1 || kvHeadNum < 1 || totalKvHeadNum < 1 || startLayer < 0 || draftLayers < 0) {
			throw new IllegalArgumentException("peer layout : pageSize=" + pageSize + " kvHeads=" + kvHeadNum + "/"
					+ totalKvHeadNum + " startLayer=" + startLayer + " draftLayers=" + draftLayers
					+ " (expected: sizes >= 1, layers >= 0)");
		}
		kv = List.copyOf(kv);
		aux = List.copyOf(aux);
		state = List.copyOf(state);
		stateKinds = List.copyOf(stateKinds);
		stateTpDims = List.copyOf(stateTpDims);
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
				allCpRanksTransfer, dsaCacheLayerSplit);
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

	private static List<RegionLayout> shapes(List<MemoryRegion> regions) {
		return regions.stream().map(r -> new RegionLayout(r.itemLen(), r.itemCount())).toList();
	}
}
