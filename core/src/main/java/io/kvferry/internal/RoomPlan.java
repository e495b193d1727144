package io.kvferry.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.LandedPages;
import io.kvferry.MemoryRegion;
import io.kvferry.StateKind;
import io.kvferry.TopologyException;
import io.kvferry.internal.topology.HeadSlicing;
import io.kvferry.internal.topology.LayerPairing;
import io.kvferry.internal.topology.LayerSpan;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;

/**
 * What a decode room expects from the prefill ranks it asks, worked out from their handshake layouts the way each of
 * them plans its sends: how many times every granted byte of each KV, aux and state buffer is written; what the engine
 * may ask for; and what landed of it, from the ledger. Stateless.
 */
final class RoomPlan {

	/** A prefill rank that writes the room: its layout and its CP rank. */
	record Source(PeerLayout layout, int cpRank) {
	}

	private RoomPlan() {
	}

	/**
	 * @param args this decode rank's registered memory
	 * @param own this decode rank's layout
	 * @param pages the room's destination pages
	 * @param auxRow the room's aux row, or -1
	 * @param slotsPerRegion the room's slots in each state buffer
	 * @param sources the prefill ranks asked to write (not MLA's dummy ranks), every CP rank that sends a share
	 * @return the room's ledger
	 * @throws TopologyException when a granted item has no prefill rank to write it (a main-model layer buffer
	 *         included: only decode's own draft layers may be left unwritten), or the ranks would write part of an
	 *         item's bytes more often than the rest
	 */
	static GrantLedger ledger(KVArgs args, PeerLayout own, int[] pages, int auxRow, int[][] slotsPerRegion,
			List<Source> sources) {
		// The CP ranks of one prefill rank split its pages (or its layers) between them: together they fill what CP
		// rank 0 alone would, so it stands for them all.
		List<PeerLayout> kvSources = new ArrayList<>();
		for (Source s : sources) {
			if (s.cpRank() == 0) {
				kvSources.add(s.layout());
			}
		}
		long[] perPage = LayerLanding.bytesPerPage(own, kvSources);
		int[] kvTimes = new int[perPage.length];
		for (int r = 0; r < perPage.length; r++) {
			kvTimes[r] = times("KV buffer ", r, perPage[r], args.kvRegions().get(r).itemLen());
		}
		checkEveryLayerFilled(own, kvSources, kvTimes);
		int auxTimes = 0;
		if (auxRow >= 0 && !args.auxRegions().isEmpty()) {
			// Every prefill rank asked sends the aux row whole: the same bytes from each.
			for (Source s : sources) {
				if (!s.layout().aux().isEmpty()) {
					auxTimes++;
				}
			}
			if (auxTimes == 0) {
				throw new TopologyException("decode asked for aux row " + auxRow + ", but none of the "
						+ sources.size() + " prefill ranks asked registers aux buffers");
			}
		}
		int[] stateTimes = new int[args.stateRegions().size()];
		for (int i = 0; i < stateTimes.length; i++) {
			if (i >= slotsPerRegion.length || slotsPerRegion[i].length == 0) {
				continue;
			}
			long perSlot = 0;
			for (Source s : sources) {
				perSlot += stateBytes(own, s.layout(), i);
			}
			stateTimes[i] = times("state buffer ", i, perSlot, args.stateRegions().get(i).itemLen());
			if (stateTimes[i] == 0) {
				throw new TopologyException("decode asked for " + slotsPerRegion[i].length + " slots of state buffer "
						+ i + ", but none of the " + sources.size() + " prefill ranks asked sends state there");
			}
		}
		return GrantLedger.of(args, pages, auxRow, slotsPerRegion, kvTimes, auxTimes, stateTimes,
				own.pageSize() * headsPerPage(own, kvSources), sources.size());
	}

	/**
	 * @return heads of one token in a KV page of this decode rank, as its layout declares them or as the prefill ranks'
	 *         head slicing splits them, whichever is more: the ledger lets a page be cut into one piece per head of
	 *         each of its tokens
	 */
	private static int headsPerPage(PeerLayout own, List<PeerLayout> sources) {
		int heads = own.kvHeadNum();
		int d = own.parallel().attnTpSize();
		for (PeerLayout p : sources) {
			heads = Math.max(heads, (p.totalKvHeadNum() + d - 1) / d);
		}
		return heads;
	}

	/**
	 * Every main-model layer buffer of the decode rank must be written by some prefill rank the room asks (PP stages
	 * together fill a decode rank of PP 1): a buffer nobody writes would expect no byte, and the room would succeed
	 * with its pages never written. Only the decode rank's own draft-model layers, which it declared as such, may be
	 * left to its engine.
	 *
	 * @throws TopologyException naming the first unfilled buffer, its layer, and the layers each side holds
	 */
	private static void checkEveryLayerFilled(PeerLayout own, List<PeerLayout> sources, int[] kvTimes) {
		boolean mla = own.mla();
		LayerSpan span = new LayerSpan(own.kv().size(), own.startLayer(), own.draftLayers());
		int main = span.mainLayers(mla);
		int mainBuffers = mla ? main : 2 * main;
		for (int r = 0; r < mainBuffers; r++) {
			if (kvTimes[r] != 0) {
				continue;
			}
			List<String> held = new ArrayList<>();
			for (PeerLayout p : sources) {
				LayerSpan s = new LayerSpan(p.kv().size(), p.startLayer(), p.draftLayers());
				held.add(LayerPairing.range(p.startLayer(), s.mainLayers(mla)));
			}
			int layer = own.startLayer() + r % main;
			throw new TopologyException("decode KV buffer " + r + " (layer " + layer + (mla ? "" : r < main ? " K"
					: " V") + ") is written by none of the " + sources.size() + " prefill ranks asked: decode holds "
					+ "layers " + LayerPairing.range(own.startLayer(), main) + ", the prefill ranks " + held
					+ " (expected: together every layer of decode's)");
		}
	}

	/** @return bytes of each slot of decode state buffer {@code i} that one prefill rank sends, as its plan cuts them */
	private static long stateBytes(PeerLayout decode, PeerLayout prefill, int i) {
		if (i >= prefill.state().size()) {
			return 0;
		}
		int dstLen = decode.state().get(i).itemLen();
		int p = prefill.parallel().attnTpSize();
		int d = decode.parallel().attnTpSize();
		StateKind kind = decode.stateKinds().isEmpty() ? null : decode.stateKinds().get(i);
		if (p == d || kind != StateKind.MAMBA || prefill.stateTpDims().isEmpty()) {
			return dstLen;
		}
		int srcDim = prefill.stateTpDims().get(i);
		return HeadSlicing.plan(srcDim * p, p, d, prefill.parallel().attnTpRank(), decode.engineRank() % d,
				prefill.state().get(i).itemLen(), dstLen, 1).sliceBytes();
	}

	// The buffer's name is put together only for the message: this runs for every buffer of every room.
	private static int times(String kind, int buffer, long bytesPerItem, int itemLen) {
		if (bytesPerItem % itemLen != 0) {
			throw new TopologyException(kind + buffer + ": the prefill ranks asked write " + bytesPerItem
					+ " bytes into each " + itemLen + "-byte item (expected: every byte of it equally often)");
		}
		return Math.toIntExact(bytesPerItem / itemLen);
	}

	/**
	 * Checks indices a receiver was given for one kind of buffer: each names an item of every such buffer, once.
	 *
	 * @throws IllegalArgumentException naming the first index that does not
	 */
	static void checkIndices(String what, int[] indices, List<MemoryRegion> regions) {
		if (indices.length == 0) {
			return;
		}
		if (regions.isEmpty()) {
			throw new IllegalArgumentException(what + " given but this rank registered no such buffers");
		}
		long items = Long.MAX_VALUE;
		for (MemoryRegion r : regions) {
			items = Math.min(items, r.itemCount());
		}
		for (int i : indices) {
			if (i < 0 || i >= items) {
				throw new IllegalArgumentException(what + " : " + i + " (expected: 0.." + (items - 1) + ")");
			}
		}
		int[] sorted = indices.clone();
		Arrays.sort(sorted);
		for (int i = 1; i < sorted.length; i++) {
			if (sorted[i] == sorted[i - 1]) {
				// Two positions would land in one item: one of them would overwrite the other.
				throw new IllegalArgumentException(what + " " + sorted[i] + " listed twice (expected: distinct)");
			}
		}
	}

	/**
	 * Checks what the engine asks a room for against this rank's buffers, before anything is asked of prefill.
	 *
	 * @param args this decode rank's registered memory
	 * @param dcpSize the decode CP size: each rank holds every DCP-th token, so a prefix is whole virtual pages
	 * @return the state lists, one per component
	 * @throws IllegalArgumentException naming the first index or length that does not fit
	 */
	static int[][] checkMetadata(KVArgs args, int dcpSize, int decodePrefixLen, int[] pages, int auxIndex,
			int[][] stateIndices) {
		int pageSize = args.pageSize() * dcpSize;
		if (decodePrefixLen < 0 || decodePrefixLen % pageSize != 0) {
			throw new IllegalArgumentException("decodePrefixLen : " + decodePrefixLen + " (expected: >= 0 and a "
					+ "multiple of page_size " + pageSize + ": decode holds whole pages of the prefix)");
		}
		List<MemoryRegion> stateRegions = args.stateRegions();
		int[][] states = StateLists.check(args.stateKinds(), stateRegions.size(), stateIndices);
		int[][] perRegion = StateLists.perRegion(args.stateKinds(), stateRegions.size(), states);
		checkIndices("page index", pages, args.kvRegions());
		for (int i = 0; i < perRegion.length; i++) {
			checkIndices("state index", perRegion[i], List.of(stateRegions.get(i)));
		}
		if (auxIndex != -1) {
			checkIndices("auxIndex", new int[] { auxIndex }, args.auxRegions());
		}
		return states;
	}

	/**
	 * @param requested the room's destination pages
	 * @param ledger the room's ledger, or null when nothing was asked
	 * @param layers this rank's KV layers
	 * @return the requested pages that landed whole, per layer the room fills, from the ledger alone. A decode-only
	 *         draft model's layers, which no prefill rank writes, come last and are left out: nothing landed there, and
	 *         nothing was to.
	 */
	static LandedPages landedPages(int[] requested, GrantLedger ledger, LayerRegions layers) {
		int filled = layers.layers();
		while (ledger != null && filled > 0 && ledger.times(RegionKind.KV, layers.regions(filled - 1)[0]) == 0) {
			filled--;
		}
		BitSet[] perLayer = new BitSet[filled];
		for (int layer = 0; layer < perLayer.length; layer++) {
			BitSet landed = new BitSet(requested.length);
			if (ledger != null) {
				int[] regions = layers.regions(layer);
				for (int i = 0; i < requested.length; i++) {
					boolean whole = true;
					for (int r = 0; r < regions.length && whole; r++) {
						whole = ledger.landedItem(regions[r], requested[i]);
					}
					landed.set(i, whole);
				}
			}
			perLayer[layer] = landed;
		}
		return LandedPages.of(requested, perLayer);
	}
}
