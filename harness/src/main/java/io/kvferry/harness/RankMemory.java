package io.kvferry.harness;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.function.LongUnaryOperator;

import io.kvferry.KVArgs;
import io.kvferry.KVLayout;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.StateKind;
import io.kvferry.spi.RegionKind;
import io.kvferry.transport.synthetic.SyntheticPattern;
import io.kvferry.transport.synthetic.SyntheticPrefill;
import io.netty.util.internal.PlatformDependent;
import org.jspecify.annotations.Nullable;

/**
 * One rank's registered memory laid out as SGLang lays it out (K buffers of the rank's layers, then V buffers, then
 * draft K and V; MLA one buffer per layer), with pattern fill on prefill and byte-exact checks on decode. Each page is
 * ordered as the rank's {@link KVLayout} says, computed here independently of the library: fill writes each head of
 * each token where the rank's own layout keeps it and the checks look for it there, so a check of a decode rank of
 * another layout than its prefill ranks' is a byte-exact check against a reference re-layout.
 */
public final class RankMemory {

	private final ModelShape shape;
	private final ParallelLayout layout;
	private final int firstLayer;
	private final int layerCount;
	private final int draftLayers;
	private final KVLayout kvLayout;
	private final KVArgs args;

	private RankMemory(ModelShape shape, ParallelLayout layout, KVLayout kvLayout, int engineRank, int firstLayer,
			int layerCount, int draftLayers, long pages, int auxRows, int stateSlots) {
		this.shape = shape;
		this.kvLayout = kvLayout;
		this.layout = layout;
		this.firstLayer = firstLayer;
		this.layerCount = layerCount;
		this.draftLayers = draftLayers;
		int itemLen = shape.itemLen(layout.attnTpSize());
		int buffersPerLayer = shape.mla() ? 1 : 2;
		List<MemoryRegion> kv = new ArrayList<>();
		for (int b = 0; b < buffersPerLayer; b++) {
			for (int l = 0; l < layerCount; l++) {
				kv.add(MemoryRegion.allocate(pages, itemLen));
			}
		}
		for (int b = 0; b < buffersPerLayer; b++) {
			for (int l = 0; l < draftLayers; l++) {
				kv.add(MemoryRegion.allocate(pages, itemLen));
			}
		}
		List<MemoryRegion> aux = shape.auxItemLen() == 0 ? List.of()
				: List.of(MemoryRegion.allocate(auxRows, shape.auxItemLen()));
		List<MemoryRegion> state = new ArrayList<>();
		List<StateKind> kinds = new ArrayList<>();
		List<Integer> dims = new ArrayList<>();
		if (shape.mambaUnits() > 0) {
			int units = shape.mambaUnitsPerRank(layout.attnTpSize());
			for (int t = 0; t < ModelShape.MAMBA_TENSORS; t++) {
				state.add(MemoryRegion.allocate(stateSlots, units * shape.stateItemLen()));
				kinds.add(StateKind.MAMBA);
				dims.add(units);
			}
		}
		else if (shape.stateItemLen() > 0) {
			state.add(MemoryRegion.allocate(stateSlots, shape.stateItemLen()));
		}
		this.args = KVArgs.builder()
				.engineRank(engineRank)
				.kvRegions(kv)
				.auxRegions(aux)
				.stateRegions(state)
				.stateKinds(kinds)
				.stateTpDims(dims)
				.pageSize(shape.pageSize())
				.prefillStartLayer(firstLayer)
				.draftLayers(draftLayers)
				.kvHeads(shape.headsPerRank(layout.attnTpSize()), shape.mla() ? 1 : shape.kvHeads())
				.mla(shape.mla())
				.kvLayout(kvLayout)
				.build();
	}

	/**
	 * Memory of a prefill rank: the layers of its PP stage, no draft layers.
	 *
	 * @param pages pages per layer buffer
	 * @param auxRows rows of the aux buffer
	 * @param stateSlots slots of the state buffer
	 */
	public static RankMemory prefill(ModelShape shape, ParallelLayout layout, long pages, int auxRows, int stateSlots) {
		return prefill(shape, layout, KVLayout.NHD, pages, auxRows, stateSlots);
	}

	/** Memory of a prefill rank whose KV pages are ordered as {@code kvLayout} says. */
	public static RankMemory prefill(ModelShape shape, ParallelLayout layout, KVLayout kvLayout, long pages,
			int auxRows, int stateSlots) {
		int per = stageLayers(shape, layout);
		return new RankMemory(shape, layout, kvLayout, layout.attnTpRank(), layout.ppRank() * per, per, 0, pages,
				auxRows, stateSlots);
	}

	/** Memory of a decode rank: its PP stage's layers (all layers at PP 1), then the shape's draft layers. */
	public static RankMemory decode(ModelShape shape, ParallelLayout layout, long pages, int auxRows, int stateSlots) {
		return decode(shape, layout, KVLayout.NHD, pages, auxRows, stateSlots);
	}

	/** Memory of a decode rank whose KV pages are ordered as {@code kvLayout} says. */
	public static RankMemory decode(ModelShape shape, ParallelLayout layout, KVLayout kvLayout, long pages,
			int auxRows, int stateSlots) {
		int per = stageLayers(shape, layout);
		return new RankMemory(shape, layout, kvLayout, layout.attnTpRank(), layout.ppRank() * per, per,
				shape.draftLayers(), pages, auxRows, stateSlots);
	}

	/**
	 * @return byte offset in a page of head {@code h} (of this rank's {@code heads}) of token {@code t}: token-major
	 *         (NHD) or head-major (HND) as this rank's layout says
	 */
	private long headOffset(int t, int h, int heads) {
		return kvLayout == KVLayout.HND ? ((long) h * shape.pageSize() + t) * shape.headBytes()
				: ((long) t * heads + h) * shape.headBytes();
	}

	private static int stageLayers(ModelShape shape, ParallelLayout layout) {
		if (shape.layers() % layout.ppSize() != 0) {
			throw new IllegalArgumentException("layers : " + shape.layers() + " (expected: a multiple of PP size "
					+ layout.ppSize() + ")");
		}
		return shape.layers() / layout.ppSize();
	}

	public KVArgs kvArgs() {
		return args;
	}

	public ParallelLayout layout() {
		return layout;
	}

	/** @return KV bytes this rank holds for {@code pages} pages (all its layer buffers, draft excluded) */
	public long kvBytes(int pages) {
		return (long) pages * shape.itemLen(layout.attnTpSize()) * layerCount * (shape.mla() ? 1 : 2);
	}

	/** Writes the room's pattern into its pages, aux row and state slots. */
	public void fill(long room, int[] pages, int auxRow, int[] stateSlots) {
		WordRun write = (address, seed, words) -> {
			write(address, seed, words);
			return true;
		};
		forEachRun(room, pages, -1, write, slot -> slot);
		forEachAuxAndStateRun(room, auxRow, stateSlots, write);
	}

	/**
	 * Writes one item of a room at {@code address} with the words {@link #fill} writes there on a rank of this layout:
	 * what a synthetic prefill rank that mirrors this decode rank sends, so that {@link #verify} checks it byte for byte.
	 *
	 * @param room the room
	 * @param kind which region list
	 * @param region index in the list (KV: main-model buffers, K then V)
	 * @param ordinal KV: the room's page (counting a prefix decode held); aux: 0; state: the slot's position in the room's
	 *        list
	 * @param address where the item's bytes go: one item length of the region
	 */
	public void fillItem(long room, RegionKind kind, int region, long ordinal, long address) {
		switch (kind) {
			case KV -> {
				int tp = layout.attnTpSize();
				int heads = shape.headsPerRank(tp);
				int layer = firstLayer + region % layerCount;
				for (int t = 0; t < shape.pageSize(); t++) {
					long token = ordinal * shape.pageSize() + t;
					for (int h = 0; h < heads; h++) {
						long seed = Patterns.seed(room, layer, region / layerCount, token,
								shape.modelHead(tp, layout.attnTpRank(), h));
						write(address + headOffset(t, h, heads), seed, shape.headBytes() / 8);
					}
				}
			}
			case AUX -> write(address, Patterns.seed(room, Patterns.AUX, region, 0, 0),
					args.auxRegions().get(region).itemLen() / 8);
			case STATE -> {
				if (shape.mambaUnits() > 0) {
					int units = shape.mambaUnitsPerRank(layout.attnTpSize());
					for (int u = 0; u < units; u++) {
						write(address + (long) u * shape.stateItemLen(), Patterns.seed(room, Patterns.STATE, region,
								ordinal, layout.attnTpRank() * units + u), shape.stateItemLen() / 8);
					}
				}
				else {
					write(address, Patterns.seed(room, Patterns.STATE, region, ordinal, 0),
							args.stateRegions().get(region).itemLen() / 8);
				}
			}
		}
	}

	/**
	 * @param decodeRanks the decode instance's ranks
	 * @return the pattern a {@link SyntheticPrefill} writes for them: each item as the decode rank of the synthetic
	 *         rank's TP and PP rank verifies it
	 */
	public static SyntheticPattern synthetic(List<RankMemory> decodeRanks) {
		List<RankMemory> ranks = List.copyOf(decodeRanks);
		return (rank, room, kind, region, ordinal, address, length) -> {
			for (RankMemory m : ranks) {
				ParallelLayout at = rank.parallel();
				if (m.layout.attnTpRank() == at.attnTpRank() && m.layout.ppRank() == at.ppRank()) {
					m.fillItem(room, kind, region, ordinal, address);
					return;
				}
			}
			throw new IllegalArgumentException("synthetic rank tp " + rank.parallel().attnTpRank() + " pp "
					+ rank.parallel().ppRank() + " : no such decode rank");
		};
	}

	private static void write(long address, long seed, int words) {
		for (int w = 0; w < words; w++) {
			PlatformDependent.putLong(address + 8L * w, Patterns.word(seed, w));
		}
	}

	/**
	 * Checks every byte of the room's pages (layers this rank holds, not draft layers), its aux row and state slots.
	 *
	 * @return null when all match, else a description of the first mismatch
	 */
	public @Nullable String verify(long room, int[] pages, int auxRow, int[] stateSlots) {
		return verify(room, pages, 0, auxRow, stateSlots);
	}

	/**
	 * Checks the room's pages after a prefix decode already held: {@code pages[i]} holds the room's page
	 * {@code firstPage + i}.
	 *
	 * @return null when all match, else a description of the first mismatch
	 */
	public @Nullable String verify(long room, int[] pages, int firstPage, int auxRow, int[] stateSlots) {
		return verify(room, pages, firstPage, auxRow, stateSlots, Long.MAX_VALUE, 1);
	}

	/**
	 * Checks the room's pages when prefill's pages held {@code heldTokens} token slots in pages of
	 * {@code srcPageSize}: slots of decode's last page past them hold copies of prefill's last page, as kvferry fills
	 * them when decode's pages are larger.
	 *
	 * @return null when all match, else a description of the first mismatch
	 */
	public @Nullable String verify(long room, int[] pages, int firstPage, int auxRow, int[] stateSlots,
			long heldTokens, int srcPageSize) {
		@Nullable String[] first = new String[1];
		WordRun check = checker(room, first);
		if (forEachRun(room, pages, -1, check, slot -> {
			long s = (long) firstPage * shape.pageSize() + slot;
			return s < heldTokens ? s : heldTokens - srcPageSize + (s - heldTokens) % srcPageSize;
		})) {
			forEachAuxAndStateRun(room, auxRow, stateSlots, check);
		}
		return first[0];
	}

	/**
	 * Checks the room's pages on a decode rank of decode context parallelism (its layout's CP): local slot j of the
	 * pages holds the room's token {@code prefixTokens + j × dcp + dcpRank}; slots past the rank's share of prefill's
	 * {@code heldTokens} slots after the prefix hold copies of the first slots of prefill's last page, as kvferry fills
	 * a DCP rank's last page.
	 *
	 * @return null when all match, else a description of the first mismatch
	 */
	public @Nullable String verifyDcp(long room, int[] pages, long prefixTokens, int auxRow, int[] stateSlots,
			long heldTokens) {
		int dcp = layout.attnCpSize();
		int rank = layout.attnCpRank();
		long share = heldTokens <= rank ? 0 : (heldTokens - rank + dcp - 1) / dcp;
		@Nullable String[] first = new String[1];
		WordRun check = checker(room, first);
		if (forEachRun(room, pages, -1, check, local -> prefixTokens + (local < share ? local * dcp + rank
				: heldTokens - shape.pageSize() + (local - share)))) {
			forEachAuxAndStateRun(room, auxRow, stateSlots, check);
		}
		return first[0];
	}

	/**
	 * Checks every byte of the room's pages in the buffers of one of this rank's layers (K and V, or MLA's one), as a
	 * room's layer stream promises them once it emitted the layer.
	 *
	 * @param firstPage the room's page {@code pages[0]} holds ({@code pages[i]} holds page {@code firstPage + i})
	 * @param layer the layer's position among this rank's layers (0 for its first), not a draft layer
	 * @return null when all match, else a description of the first mismatch
	 */
	public @Nullable String verifyLayer(long room, int[] pages, int firstPage, int layer) {
		if (layer < 0 || layer >= layerCount) {
			throw new IllegalArgumentException("layer : " + layer + " (expected: 0.." + (layerCount - 1) + ")");
		}
		@Nullable String[] first = new String[1];
		forEachRun(room, pages, layer, checker(room, first), slot -> (long) firstPage * shape.pageSize() + slot);
		return first[0];
	}

	private static WordRun checker(long room, @Nullable String[] first) {
		return (address, seed, words) -> {
			for (int w = 0; w < words; w++) {
				long expected = Patterns.word(seed, w);
				long actual = PlatformDependent.getLong(address + 8L * w);
				if (actual != expected) {
					first[0] = "room " + room + ": word at 0x" + Long.toHexString(address + 8L * w) + " is 0x"
							+ Long.toHexString(actual) + ", expected 0x" + Long.toHexString(expected);
					return false;
				}
			}
			return true;
		};
	}

	/** @return whether every byte of these pages in every KV buffer is zero (pages of an aborted room) */
	public boolean isZero(int[] pages) {
		int itemLen = shape.itemLen(layout.attnTpSize());
		for (MemoryRegion r : args.kvRegions()) {
			for (int p : pages) {
				long base = r.itemAddress(p);
				for (int off = 0; off < itemLen; off += 8) {
					if (PlatformDependent.getLong(base + off) != 0) {
						return false;
					}
				}
			}
		}
		return true;
	}

	/** @return a 64-bit hash of these pages' bytes in every KV buffer (to prove they did not change) */
	public long checksum(int[] pages) {
		int itemLen = shape.itemLen(layout.attnTpSize());
		long h = 0x9E3779B97F4A7C15L;
		for (MemoryRegion r : args.kvRegions()) {
			for (int p : pages) {
				long base = r.itemAddress(p);
				for (int off = 0; off < itemLen; off += 8) {
					h = (h ^ PlatformDependent.getLong(base + off)) * 0x100000001B3L;
				}
			}
		}
		return h;
	}

	/** Visits a run of consecutive words that share one {@link Patterns#seed}; returns false to stop. */
	private interface WordRun {
		boolean visit(long address, long seed, int words);
	}

	/**
	 * A 64-bit hash of every byte of this rank's KV, aux and state regions outside the given pages, rows and slots:
	 * equal before and after a room proves nothing outside what the room was granted changed.
	 */
	public long checksumOutside(int[] pages, int auxRow, int[] stateSlots) {
		long h = 0x9E3779B97F4A7C15L;
		h = hashOutside(h, args.kvRegions(), pages);
		h = hashOutside(h, args.auxRegions(), auxRow < 0 ? new int[0] : new int[] { auxRow });
		return hashOutside(h, args.stateRegions(), stateSlots);
	}

	private static long hashOutside(long h, List<MemoryRegion> regions, int[] skip) {
		BitSet granted = new BitSet();
		for (int i : skip) {
			granted.set(i);
		}
		for (MemoryRegion r : regions) {
			for (long item = 0; item < r.itemCount(); item++) {
				if (granted.get((int) item)) {
					continue;
				}
				long base = r.itemAddress(item);
				for (int off = 0; off + 8 <= r.itemLen(); off += 8) {
					h = (h ^ PlatformDependent.getLong(base + off)) * 0x100000001B3L;
				}
			}
		}
		return h;
	}

	/**
	 * Visits every head of every token of the pages; {@code tokenOf} gives the room's token that slot
	 * {@code i × page size + t} of the pages (page {@code pages[i]}, token t) holds.
	 *
	 * @param onlyLayer the one layer (position among this rank's) whose buffers to visit, or -1 for all of them
	 * @return false when the visitor stopped early
	 */
	private boolean forEachRun(long room, int[] pages, int onlyLayer, WordRun v, LongUnaryOperator tokenOf) {
		int tp = layout.attnTpSize();
		int heads = shape.headsPerRank(tp);
		int headWords = shape.headBytes() / 8;
		int itemLen = shape.itemLen(tp);
		int buffers = shape.mla() ? 1 : 2;
		int[] modelHeads = new int[heads];
		for (int h = 0; h < heads; h++) {
			modelHeads[h] = shape.modelHead(tp, layout.attnTpRank(), h);
		}
		for (int b = 0; b < buffers; b++) {
			for (int l = 0; l < layerCount; l++) {
				if (onlyLayer >= 0 && l != onlyLayer) {
					continue;
				}
				MemoryRegion region = args.kvRegions().get(b * layerCount + l);
				int layer = firstLayer + l;
				for (int i = 0; i < pages.length; i++) {
					long pageBase = region.address() + (long) pages[i] * itemLen;
					for (int t = 0; t < shape.pageSize(); t++) {
						long token = tokenOf.applyAsLong((long) i * shape.pageSize() + t);
						for (int h = 0; h < heads; h++) {
							long seed = Patterns.seed(room, layer, b, token, modelHeads[h]);
							if (!v.visit(pageBase + headOffset(t, h, heads), seed, headWords)) {
								return false;
							}
						}
					}
				}
			}
		}
		return true;
	}

	private void forEachAuxAndStateRun(long room, int auxRow, int[] stateSlots, WordRun v) {
		if (auxRow >= 0) {
			for (int i = 0; i < args.auxRegions().size(); i++) {
				MemoryRegion r = args.auxRegions().get(i);
				if (!v.visit(r.itemAddress(auxRow), Patterns.seed(room, Patterns.AUX, i, 0, 0), r.itemLen() / 8)) {
					return;
				}
			}
		}
		if (shape.mambaUnits() > 0) {
			// Each unit of the sharded dimension has the words of its model-wide position, wherever it is held.
			int units = shape.mambaUnitsPerRank(layout.attnTpSize());
			int unitWords = shape.stateItemLen() / 8;
			for (int i = 0; i < args.stateRegions().size(); i++) {
				MemoryRegion r = args.stateRegions().get(i);
				for (int s = 0; s < stateSlots.length; s++) {
					for (int u = 0; u < units; u++) {
						int unit = layout.attnTpRank() * units + u;
						long base = r.itemAddress(stateSlots[s]) + (long) u * shape.stateItemLen();
						if (!v.visit(base, Patterns.seed(room, Patterns.STATE, i, s, unit), unitWords)) {
							return;
						}
					}
				}
			}
			return;
		}
		for (int i = 0; i < args.stateRegions().size(); i++) {
			MemoryRegion r = args.stateRegions().get(i);
			for (int s = 0; s < stateSlots.length; s++) {
				if (!v.visit(r.itemAddress(stateSlots[s]), Patterns.seed(room, Patterns.STATE, i, s, 0),
						r.itemLen() / 8)) {
					return;
				}
			}
		}
	}
}
