package io.kvferry;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * A rank's registered memory and layout, in SGLang's order.
 *
 * <p>KV regions: for MHA all K buffers of the rank's layers, then all V buffers, then draft-model K and V buffers; for
 * MLA one latent buffer per layer, then draft layers. Each KV region holds one page of one layer per item. Aux regions
 * hold one metadata row per item, state regions one state slot (or state page) per item. A backend that keeps a layer's
 * K and V in one buffer, every page's K then every page's V, declares those buffers with
 * {@link Builder#fusedKvRegions} instead, and they are split into K and V regions in this order.
 *
 * <pre>{@code
 * KVArgs args = KVArgs.builder()
 *         .engineRank(0)
 *         .pageSize(16)
 *         .kvHeads(8, 8)
 *         .kvRegions(kRegions)        // then V regions, in one list
 *         .auxRegions(List.of(auxRows))
 *         .build();
 * }</pre>
 */
public final class KVArgs {

	private final int engineRank;
	private final List<MemoryRegion> kvRegions;
	private final List<MemoryRegion> auxRegions;
	private final List<MemoryRegion> stateRegions;
	private final List<StateKind> stateKinds;
	private final List<Integer> stateTpDims;
	private final int pageSize;
	private final int prefillStartLayer;
	private final int draftLayers;
	private final int kvHeadNum;
	private final int totalKvHeadNum;
	private final boolean mla;
	private final String dtype;
	private final String modelId;
	private final int modelLayers;
	private final KVLayout kvLayout;

	private KVArgs(Builder b, List<MemoryRegion> kvRegions) {
		this.engineRank = b.engineRank;
		this.kvRegions = List.copyOf(kvRegions);
		this.auxRegions = List.copyOf(b.auxRegions);
		this.stateRegions = List.copyOf(b.stateRegions);
		this.stateKinds = List.copyOf(b.stateKinds);
		this.stateTpDims = List.copyOf(b.stateTpDims);
		this.pageSize = b.pageSize;
		this.prefillStartLayer = b.prefillStartLayer;
		this.draftLayers = b.draftLayers;
		this.kvHeadNum = b.kvHeadNum;
		this.totalKvHeadNum = b.totalKvHeadNum;
		this.mla = b.mla;
		this.dtype = b.dtype;
		this.modelId = b.modelId;
		this.modelLayers = b.modelLayers;
		this.kvLayout = b.kvLayout;
		if (engineRank < 0) {
			throw new IllegalArgumentException("engineRank : " + engineRank + " (expected: >= 0)");
		}
		if (pageSize < 1) {
			throw new IllegalArgumentException("pageSize : " + pageSize + " (expected: >= 1)");
		}
		if (kvRegions.isEmpty()) {
			throw new IllegalArgumentException("kvRegions : empty (expected: at least one KV buffer)");
		}
		if (!mla && kvRegions.size() % 2 != 0) {
			throw new IllegalArgumentException("kvRegions : " + kvRegions.size()
					+ " buffers (expected: an even count for MHA, K buffers then V buffers)");
		}
		if (prefillStartLayer < 0) {
			throw new IllegalArgumentException("prefillStartLayer : " + prefillStartLayer + " (expected: >= 0)");
		}
		if (draftLayers < 0 || draftLayers > (mla ? kvRegions.size() : kvRegions.size() / 2)) {
			throw new IllegalArgumentException("draftLayers : " + draftLayers + " (expected: 0.."
					+ (mla ? kvRegions.size() : kvRegions.size() / 2) + ")");
		}
		if (kvHeadNum < 1 || totalKvHeadNum < 1) {
			throw new IllegalArgumentException("kvHeads : " + kvHeadNum + "/" + totalKvHeadNum + " (expected: >= 1)");
		}
		if (!stateKinds.isEmpty() && stateKinds.size() != stateRegions.size()) {
			throw new IllegalArgumentException("stateKinds : " + stateKinds.size() + " kinds for " + stateRegions.size()
					+ " state regions (expected: one kind per state region, or none)");
		}
		if (!stateTpDims.isEmpty() && stateTpDims.size() != stateRegions.size()) {
			throw new IllegalArgumentException("stateTpDims : " + stateTpDims.size() + " dims for "
					+ stateRegions.size() + " state regions (expected: one per state region, or none)");
		}
		for (int i = 0; i < stateTpDims.size(); i++) {
			int dim = stateTpDims.get(i);
			if (dim < 1 || stateRegions.get(i).itemLen() % dim != 0) {
				throw new IllegalArgumentException("stateTpDims[" + i + "] : " + dim + " (expected: >= 1 and dividing"
						+ " the state item length " + stateRegions.get(i).itemLen() + ")");
			}
		}
		if (modelLayers < 0 || (modelLayers > 0 && modelLayers < prefillStartLayer + kvLayerCount())) {
			throw new IllegalArgumentException("modelLayers : " + modelLayers + " (expected: 0 for undeclared, or at "
					+ "least the " + (prefillStartLayer + kvLayerCount()) + " layers up to this rank's last)");
		}
		for (MemoryRegion r : kvRegions) {
			if (r.itemLen() % pageSize != 0) {
				throw new IllegalArgumentException("kv itemLen : " + r.itemLen() + " (expected: a multiple of pageSize "
						+ pageSize + ")");
			}
		}
	}

	public static Builder builder() {
		return new Builder();
	}

	/** @return a builder holding this object's values */
	public Builder mutate() {
		Builder b = new Builder();
		b.engineRank = engineRank;
		b.kvRegions = new ArrayList<>(kvRegions);
		b.auxRegions = new ArrayList<>(auxRegions);
		b.stateRegions = new ArrayList<>(stateRegions);
		b.stateKinds = new ArrayList<>(stateKinds);
		b.stateTpDims = new ArrayList<>(stateTpDims);
		b.pageSize = pageSize;
		b.prefillStartLayer = prefillStartLayer;
		b.draftLayers = draftLayers;
		b.kvHeadNum = kvHeadNum;
		b.totalKvHeadNum = totalKvHeadNum;
		b.mla = mla;
		b.dtype = dtype;
		b.modelId = modelId;
		b.modelLayers = modelLayers;
		b.kvLayout = kvLayout;
		return b;
	}

	public int engineRank() {
		return engineRank;
	}

	public List<MemoryRegion> kvRegions() {
		return kvRegions;
	}

	public List<MemoryRegion> auxRegions() {
		return auxRegions;
	}

	public List<MemoryRegion> stateRegions() {
		return stateRegions;
	}

	/** @return the kind of each state region, parallel to {@link #stateRegions()}; empty when undeclared */
	public List<StateKind> stateKinds() {
		return stateKinds;
	}

	/**
	 * @return the size of each state region's TP-sharded dimension on this rank, parallel to {@link #stateRegions()};
	 *         empty when undeclared
	 */
	public List<Integer> stateTpDims() {
		return stateTpDims;
	}

	/**
	 * @return the state components a room names one index list for, in order: the distinct kinds in the order they
	 *         first appear among the state regions; empty when no kinds are declared (then one index list serves every
	 *         state region)
	 */
	public List<StateKind> stateComponents() {
		return stateKinds.stream().distinct().toList();
	}

	public int pageSize() {
		return pageSize;
	}

	/** @return the first model layer held by this PP stage */
	public int prefillStartLayer() {
		return prefillStartLayer;
	}

	/** @return draft-model layers at the end of the KV buffer list (decode with speculative decoding) */
	public int draftLayers() {
		return draftLayers;
	}

	/** @return KV heads held by this rank */
	public int kvHeadNum() {
		return kvHeadNum;
	}

	/** @return KV heads of the whole model */
	public int totalKvHeadNum() {
		return totalKvHeadNum;
	}

	/** @return whether the KV buffers are MLA latent buffers (one per layer) */
	public boolean isMla() {
		return mla;
	}

	/** @return the KV cache dtype tag, such as {@code bf16} or {@code fp8_e4m3}; both sides must agree */
	public String dtype() {
		return dtype;
	}

	/**
	 * @return the engine's name of the model and its revision (such as {@code meta-llama/Llama-3.1-8B@5206a32}); the
	 *         handshake refuses a peer that names another, and an empty id (the default) is compared with none
	 */
	public String modelId() {
		return modelId;
	}

	/**
	 * @return main-model layers of the whole model, over every PP stage; 0 when undeclared (the default), which a rank
	 *         without PP reads as its own layer count
	 */
	public int modelLayers() {
		return modelLayers;
	}

	/** @return how the bytes of a KV page are ordered; both sides must agree */
	public KVLayout kvLayout() {
		return kvLayout;
	}

	/** @return main-model layers in the KV buffer list (draft layers excluded) */
	public int kvLayerCount() {
		return (mla ? kvRegions.size() : kvRegions.size() / 2) - draftLayers;
	}

	@Override
	public String toString() {
		return "KVArgs{engineRank=" + engineRank + ", kvRegions=" + kvRegions.size() + ", auxRegions="
				+ auxRegions.size() + ", stateRegions=" + stateRegions.size() + (stateKinds.isEmpty() ? "" : ", stateKinds=" + stateKinds) + ", pageSize=" + pageSize
				+ ", prefillStartLayer=" + prefillStartLayer + ", draftLayers=" + draftLayers + ", kvHeads=" + kvHeadNum + "/" + totalKvHeadNum
				+ ", mla=" + mla + ", dtype=" + dtype + (modelId.isEmpty() ? "" : ", modelId=" + modelId)
				+ (modelLayers == 0 ? "" : ", modelLayers=" + modelLayers)
				+ (kvLayout == KVLayout.NHD ? "" : ", kvLayout=" + kvLayout) + '}';
	}

	/** Mutable builder; {@link #build()} validates and copies. */
	public static final class Builder {
		private int engineRank;
		private List<MemoryRegion> kvRegions = new ArrayList<>();
		private List<MemoryRegion> auxRegions = new ArrayList<>();
		private List<MemoryRegion> stateRegions = new ArrayList<>();
		private List<StateKind> stateKinds = new ArrayList<>();
		private List<Integer> stateTpDims = new ArrayList<>();
		private int pageSize = 1;
		private int prefillStartLayer;
		private int draftLayers;
		private int kvHeadNum = 1;
		private int totalKvHeadNum = 1;
		private boolean mla;
		private String dtype = "bf16";
		private String modelId = "";
		private int modelLayers;
		private KVLayout kvLayout = KVLayout.NHD;
		// The layer buffers of a fused KV cache, split into kvRegions by build(); null when kvRegions were given.
		private @Nullable List<MemoryRegion> fusedKv;

		private Builder() {
		}

		public Builder engineRank(int engineRank) {
			this.engineRank = engineRank;
			return this;
		}

		public Builder kvRegions(List<MemoryRegion> regions) {
			this.kvRegions = new ArrayList<>(Objects.requireNonNull(regions, "regions"));
			this.fusedKv = null;
			return this;
		}

		/**
		 * Declares the KV cache as one buffer per layer holding both K and V, in place of {@link #kvRegions}: the main
		 * layers' buffers, then the draft layers'. Each buffer's item length is one page of K (or of V). With
		 * {@link FusedKVLayout#K_THEN_V}, {@link #build()} splits every buffer into its K half and its V half and lists
		 * them as {@link #kvRegions} would: main K, main V, draft K, draft V. The other side of a room may hold its K
		 * and V fused or apart.
		 *
		 * @param layers one buffer per layer; each must be two equal halves of whole pages, else {@link #build()} throws
		 *        an {@link IllegalArgumentException} naming the layer and its sizes
		 * @param layout how K and V share a buffer
		 * @throws TopologyException for {@link FusedKVLayout#INTERLEAVED_PER_PAGE}, whose pages kvferry cannot address
		 */
		public Builder fusedKvRegions(List<MemoryRegion> layers, FusedKVLayout layout) {
			Objects.requireNonNull(layers, "layers");
			if (Objects.requireNonNull(layout, "layout") == FusedKVLayout.INTERLEAVED_PER_PAGE) {
				throw new TopologyException("fused KV layout INTERLEAVED_PER_PAGE ([num_blocks, 2, block, heads, dim], K "
						+ "and V side by side in each page) is not supported: a KV region's pages must follow one "
						+ "another, and kvferry has no item stride to step over each page's V; allocate each layer as "
						+ "K_THEN_V halves ([2, num_blocks, block, heads, dim]) or as separate K and V buffers "
						+ "(kvRegions)");
			}
			this.fusedKv = new ArrayList<>(layers);
			this.kvRegions = new ArrayList<>();
			return this;
		}

		public Builder auxRegions(List<MemoryRegion> regions) {
			this.auxRegions = new ArrayList<>(Objects.requireNonNull(regions, "regions"));
			return this;
		}

		public Builder stateRegions(List<MemoryRegion> regions) {
			this.stateRegions = new ArrayList<>(Objects.requireNonNull(regions, "regions"));
			return this;
		}

		/**
		 * Declares the kind of each state region, in the order of {@link #stateRegions}: a hybrid model's Mamba slots,
		 * SWA pages or DSA pages. Without kinds, one index list serves every state region.
		 */
		public Builder stateKinds(List<StateKind> kinds) {
			this.stateKinds = new ArrayList<>(Objects.requireNonNull(kinds, "kinds"));
			return this;
		}

		/**
		 * The size of each state region's TP-sharded (outermost) dimension on this rank, in the order of
		 * {@link #stateRegions}; a Mamba item of {@code itemLen} bytes is then {@code dim} units of
		 * {@code itemLen / dim} bytes, sliced by unit when attention TP sizes differ.
		 */
		public Builder stateTpDims(List<Integer> dims) {
			this.stateTpDims = new ArrayList<>(Objects.requireNonNull(dims, "dims"));
			return this;
		}

		public Builder pageSize(int pageSize) {
			this.pageSize = pageSize;
			return this;
		}

		public Builder prefillStartLayer(int layer) {
			this.prefillStartLayer = layer;
			return this;
		}

		/** Draft-model layers appended after the main layers (their K then V buffers, or MLA buffers). */
		public Builder draftLayers(int layers) {
			this.draftLayers = layers;
			return this;
		}

		/**
		 * @param perRank KV heads held by this rank
		 * @param total KV heads of the model
		 */
		public Builder kvHeads(int perRank, int total) {
			this.kvHeadNum = perRank;
			this.totalKvHeadNum = total;
			return this;
		}

		public Builder mla(boolean mla) {
			this.mla = mla;
			return this;
		}

		public Builder dtype(String dtype) {
			this.dtype = Objects.requireNonNull(dtype, "dtype");
			return this;
		}

		/**
		 * Names the model and its revision, so that the handshake refuses a peer serving another (a rank started on
		 * the wrong checkpoint would otherwise move KV that decodes into wrong tokens). Empty, the default, names none.
		 *
		 * @param id at most 256 bytes of UTF-8, without control characters
		 */
		public Builder modelId(String id) {
			this.modelId = Objects.requireNonNull(id, "id");
			return this;
		}

		/**
		 * Declares the model's main layers over every PP stage, so that the handshake refuses a peer whose model has
		 * another count even when either side runs PP stages; 0, the default, declares none.
		 */
		public Builder modelLayers(int layers) {
			this.modelLayers = layers;
			return this;
		}

		/** How the bytes of a KV page are ordered; {@link KVLayout#NHD} by default. */
		public Builder kvLayout(KVLayout layout) {
			this.kvLayout = Objects.requireNonNull(layout, "layout");
			return this;
		}

		public KVArgs build() {
			return new KVArgs(this, fusedKv == null ? kvRegions : splitFused(fusedKv));
		}

		/** @return the K halves of the main layers, their V halves, then the draft layers' K and V halves */
		private List<MemoryRegion> splitFused(List<MemoryRegion> layers) {
			if (mla) {
				throw new IllegalArgumentException("fusedKvRegions : " + layers.size() + " buffers with mla (expected: "
						+ "kvRegions, one latent buffer per layer, which holds no separate K and V)");
			}
			// An out-of-range draft count is refused by the constructor, with the split lists' sizes.
			int draft = draftLayers >= 0 && draftLayers <= layers.size() ? draftLayers : 0;
			int main = layers.size() - draft;
			List<MemoryRegion> regions = new ArrayList<>(2 * layers.size());
			addHalves(regions, layers, 0, main);
			addHalves(regions, layers, main, layers.size());
			return regions;
		}

		/** Adds the K halves of {@code layers[from, to)}, then their V halves. */
		private static void addHalves(List<MemoryRegion> regions, List<MemoryRegion> layers, int from, int to) {
			for (int half = 0; half < 2; half++) {
				for (int i = from; i < to; i++) {
					regions.add(half(layers.get(i), i, half));
				}
			}
		}

		private static MemoryRegion half(MemoryRegion layer, int index, int half) {
			long length = layer.length();
			long halfLength = length / 2;
			if (length % 2 != 0 || halfLength % layer.itemLen() != 0) {
				throw new IllegalArgumentException("fusedKvRegions[" + index + "] : length " + length + " with itemLen "
						+ layer.itemLen() + " (expected: K then V in two equal halves of whole pages, a multiple of "
						+ 2L * layer.itemLen() + " bytes)");
			}
			return layer.slice(half * halfLength, halfLength);
		}
	}
}
