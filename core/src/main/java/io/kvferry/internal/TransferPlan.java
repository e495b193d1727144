package io.kvferry.internal;

import java.util.Arrays;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.KVLayout;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.StateKind;
import io.kvferry.TopologyException;
import io.kvferry.internal.topology.DcpRelayout;
import io.kvferry.internal.topology.HeadSlice;
import io.kvferry.internal.topology.HeadSlicing;
import io.kvferry.internal.topology.LayerPairing;
import io.kvferry.internal.topology.LayerSpan;
import io.kvferry.internal.topology.LayoutTranslation;
import io.kvferry.internal.topology.RegionPair;
import io.kvferry.internal.topology.Repaging;
import io.kvferry.internal.topology.SlotRun;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.RegionLayout;

/**
 * How one prefill rank's regions map onto one decode rank's, decided once per connection at the handshake: which
 * decode KV buffer each prefill buffer fills (PP stages, draft layers) and, for MHA with different TP sizes, which
 * heads of each token. Turns a chunk's page lists into data blocks: one block per (run, layer buffer), a head slice
 * moving as one strided block rather than one write per token. Runs are counted in tokens, so prefill pages of one
 * size land in decode pages of another ({@link Repaging}). Where the two sides order a page differently (NHD and HND),
 * or head-major pages are cut by token, each head moves as its own strided block, read where prefill's layout keeps it
 * and written where decode's wants it ({@link LayoutTranslation}). The connection groups small blocks into scatter
 * blocks ({@link ScatterGather}).
 */
final class TransferPlan {

	/** Blocks are cut at this size so an abort takes effect quickly and frames stay moderate. */
	static final long MAX_BLOCK_BYTES = 16L << 20;

	private final MemoryRegion[] src;
	// Position in this rank's KV buffer list of each pair's source (a CP rank's layer share skips some).
	private final int[] srcBuffer;
	private final int[] dst;
	private final int[] dstItemLen;
	private final HeadSlice[] slices;
	// Per pair, the two sides' page orders when they differ in effect (null: the bytes keep their order).
	private final LayoutTranslation.Side[][] relayout;
	private final int pageSize;
	private final int dstPageSize;
	// Decode's DCP size and this destination's DCP rank: above 1, each decode rank gets only its tokens.
	private final int dcpSize;
	private final int dcpRank;
	private final long dstPages;
	private final List<MemoryRegion> srcAux;
	private final List<RegionLayout> dstAux;
	private final StatePlan state;

	private TransferPlan(MemoryRegion[] src, int[] srcBuffer, int[] dst, long[] dstItems, int[] dstItemLen,
			HeadSlice[] slices, LayoutTranslation.Side[][] relayout, int pageSize, int dstPageSize, int dcpSize,
			int dcpRank, List<MemoryRegion> srcAux, List<RegionLayout> dstAux, StatePlan state) {
		this.src = src;
		this.srcBuffer = srcBuffer;
		this.dst = dst;
		this.dstItemLen = dstItemLen;
		this.slices = slices;
		this.relayout = relayout;
		this.pageSize = pageSize;
		this.dstPageSize = dstPageSize;
		this.dcpSize = dcpSize;
		this.dcpRank = dcpRank;
		this.dstPages = Arrays.stream(dstItems).min().orElse(0);
		this.srcAux = srcAux;
		this.dstAux = dstAux;
		this.state = state;
	}

	/**
	 * Checks a decode rank's layout against this prefill rank's and plans the moves.
	 *
	 * @throws TopologyException naming the first incompatible values
	 */
	static TransferPlan of(KVArgs args, ParallelLayout own, PeerLayout decode) {
		return of(args, own, decode, false);
	}

	/**
	 * As {@link #of(KVArgs, ParallelLayout, PeerLayout)}; with {@code dsaLayerSplit} this CP rank moves only its share
	 * of the layers ({@link CpLayers}).
	 *
	 * @throws TopologyException naming the first incompatible values
	 */
	static TransferPlan of(KVArgs args, ParallelLayout own, PeerLayout decode, boolean dsaLayerSplit) {
		int srcPageSize = args.pageSize();
		int dstPageSize = decode.pageSize();
		int dcpSize = decode.parallel().attnCpSize();
		int dcpRank = decode.parallel().attnCpRank();
		if (dcpSize > 1) {
			checkDcp(args, own, srcPageSize, dstPageSize, dcpSize, dcpRank);
		}
		Repaging.checkPageSizes(srcPageSize, dstPageSize);
		if (decode.mla() != args.isMla()) {
			throw new TopologyException("MLA mismatch: prefill mla=" + args.isMla() + ", decode mla=" + decode.mla());
		}
		if (!decode.dtype().equals(args.dtype())) {
			throw new TopologyException("KV cache dtype mismatch: prefill " + args.dtype() + ", decode "
					+ decode.dtype());
		}
		if (srcPageSize != dstPageSize) {
			checkPagedState(args, srcPageSize, dstPageSize);
		}
		int p = own.attnTpSize();
		int d = decode.parallel().attnTpSize();
		if (p % d != 0 && d % p != 0) {
			throw new TopologyException("attention TP sizes do not divide each other: prefill " + p + ", decode " + d);
		}
		int decodePp = decode.parallel().ppSize();
		if (decodePp != own.ppSize() && decodePp != 1) {
			throw new TopologyException("decode PP size " + decodePp + " must equal prefill PP size " + own.ppSize()
					+ " or be 1");
		}
		LayerSpan ownSpan = new LayerSpan(args.kvRegions().size(), args.prefillStartLayer(), args.draftLayers());
		LayerSpan decodeSpan = new LayerSpan(decode.kv().size(), decode.startLayer(), decode.draftLayers());
		if (decodePp == own.ppSize()) {
			// This rank alone fills the decode rank's layers: a layer it lacks would stay unwritten in every room.
			LayerPairing.checkSameLayers(ownSpan, decodeSpan, args.isMla());
		}
		// Pairs by model layer: right for any PP split and any draft layers (SGLang's positional rule is not: it mis-pairs V buffers of uneven stage splits).
		List<RegionPair> pairs = LayerPairing.pairByLayer(ownSpan, decodeSpan, args.isMla());
		if (dsaLayerSplit) {
			pairs = CpLayers.own(pairs, args, own);
		}
		int n = pairs.size();
		MemoryRegion[] src = new MemoryRegion[n];
		int[] srcBuffer = new int[n];
		int[] dst = new int[n];
		int[] dstLen = new int[n];
		HeadSlice[] slices = new HeadSlice[n];
		LayoutTranslation.Side[][] relayout = new LayoutTranslation.Side[n][];
		boolean sliced = !args.isMla() && p != d;
		for (int i = 0; i < n; i++) {
			RegionPair pair = pairs.get(i);
			src[i] = args.kvRegions().get(pair.src());
			srcBuffer[i] = pair.src();
			dst[i] = pair.dst();
			dstLen[i] = decode.kv().get(pair.dst()).itemLen();
			if (dcpSize > 1) {
				DcpRelayout.checkTokenGeometry(pair.src(), src[i].itemLen(), srcPageSize, dstLen[i], dstPageSize);
			}
			if (sliced) {
				slices[i] = HeadSlicing.plan(args.totalKvHeadNum(), p, d, own.attnTpRank(),
						decode.engineRank() % d, src[i].itemLen(), dstLen[i], srcPageSize, dstPageSize);
			}
			else if (srcPageSize == dstPageSize && src[i].itemLen() != dstLen[i]) {
				throw new TopologyException("KV item length mismatch: prefill kv[" + pair.src() + "] "
						+ src[i].itemLen() + " bytes, decode kv[" + pair.dst() + "] " + dstLen[i] + " bytes");
			}
			else if (dstLen[i] % dstPageSize != 0
					|| (long) src[i].itemLen() * dstPageSize != (long) dstLen[i] * srcPageSize) {
				throw new TopologyException("KV token length mismatch: prefill kv[" + pair.src() + "] "
						+ src[i].itemLen() + " bytes per page of " + srcPageSize + " tokens, decode kv[" + pair.dst()
						+ "] " + dstLen[i] + " bytes per page of " + dstPageSize + " tokens (expected: the same bytes "
						+ "per token)");
			}
			relayout[i] = relayout(args, decode, pair, src[i].itemLen(), dstLen[i], slices[i]);
		}
		checkSame("aux", args.auxRegions(), decode.aux());
		StatePlan state = StatePlan.of(args, own, decode);
		long[] dstItems = decode.kv().stream().mapToLong(RegionLayout::itemCount).toArray();
		return new TransferPlan(src, srcBuffer, dst, dstItems, dstLen, slices, relayout, srcPageSize, dstPageSize,
				dcpSize, dcpRank, args.auxRegions(), decode.aux(), state);
	}

	/**
	 * The two sides' page orders of one buffer pair when its bytes must be re-laid on the way: the layouts differ, or
	 * both are head-major and the pages are cut by token (re-paging, head slices). MLA's latent is one head, ordered
	 * alike in both layouts.
	 *
	 * @return the prefill and decode sides, or null when the bytes keep their order
	 * @throws TopologyException naming the layouts when a page does not hold whole heads of its tokens
	 */
	private static LayoutTranslation.Side[] relayout(KVArgs args, PeerLayout decode, RegionPair pair, int srcLen,
			int dstLen, HeadSlice slice) {
		if (args.isMla() || args.kvLayout() == KVLayout.NHD && decode.kvLayout() == KVLayout.NHD) {
			return null;
		}
		int srcPageSize = args.pageSize();
		int dstPageSize = decode.pageSize();
		LayoutTranslation.Side s;
		LayoutTranslation.Side d;
		if (slice != null) {
			int headBytes = slice.headBytes();
			s = new LayoutTranslation.Side(args.kvLayout(), srcPageSize, srcLen / srcPageSize / headBytes, headBytes);
			d = new LayoutTranslation.Side(decode.kvLayout(), dstPageSize, dstLen / dstPageSize / headBytes, headBytes);
		}
		else {
			s = LayoutTranslation.Side.of("prefill kv[" + pair.src() + "]", args.kvLayout(), srcLen, srcPageSize,
					args.kvHeadNum());
			d = LayoutTranslation.Side.of("decode kv[" + pair.dst() + "]", decode.kvLayout(), dstLen, dstPageSize,
					decode.kvHeadNum());
			if (s.headBytes() != d.headBytes() || s.heads() != d.heads()) {
				throw new TopologyException("KV layout " + args.kvLayout() + " to " + decode.kvLayout() + ": prefill kv["
						+ pair.src() + "] holds " + s.heads() + " heads of " + s.headBytes() + " bytes per token, "
						+ "decode kv[" + pair.dst() + "] " + d.heads() + " heads of " + d.headBytes() + " bytes "
						+ "(expected: the same heads, so that each head of each token can be re-laid)");
			}
		}
		return LayoutTranslation.needed(s, d) ? new LayoutTranslation.Side[] { s, d } : null;
	}

	/**
	 * A decode at DCP above 1: this prefill (DCP 1, kvferry has no prefill DCP) relays to it only with MLA KV, without
	 * prefill attention CP and with equal page sizes; the token geometry is checked per buffer pair.
	 */
	private static void checkDcp(KVArgs args, ParallelLayout own, int srcPageSize, int dstPageSize, int dcpSize,
			int dcpRank) {
		DcpRelayout.requiresRelayout(1, 0, dcpSize, dcpRank, args.isMla());
		if (own.attnCpSize() != 1) {
			throw new TopologyException("PD decode DCP currently requires prefill attention CP=1, got "
					+ own.attnCpSize());
		}
		if (srcPageSize != dstPageSize) {
			throw new TopologyException("decode DCP " + dcpSize + " with different page sizes: prefill page_size="
					+ srcPageSize + ", decode page_size=" + dstPageSize + " (expected: equal page sizes)");
		}
		if (!args.stateKinds().isEmpty() && args.stateKinds().stream().anyMatch(k -> k == StateKind.SWA
				|| k == StateKind.DSA)) {
			throw new TopologyException("decode DCP " + dcpSize + " with paged " + args.stateKinds()
					+ " state (expected: none; such state is indexed by page, not spread by token)");
		}
	}

	/**
	 * SWA and DSA state items are pages of their own pools, indexed by page lists that are not re-paged: with page
	 * sizes that differ they would land in the wrong tokens, so such a pair is refused. Aux rows and Mamba slots
	 * belong to the request, not to a page, and move as they do with equal page sizes.
	 */
	private static void checkPagedState(KVArgs args, int srcPageSize, int dstPageSize) {
		for (StateKind kind : args.stateKinds()) {
			if (kind == StateKind.SWA || kind == StateKind.DSA) {
				throw new TopologyException(kind + " state with different page sizes: prefill page_size="
						+ srcPageSize + ", decode page_size=" + dstPageSize + " (expected: equal page sizes; " + kind
						+ " state is indexed by page)");
			}
		}
	}

	private static void checkSame(String what, List<MemoryRegion> own, List<RegionLayout> peer) {
		if (own.isEmpty()) {
			return;
		}
		if (own.size() != peer.size()) {
			throw new TopologyException(what + " buffer count mismatch: prefill " + own.size() + ", decode "
					+ peer.size());
		}
		for (int i = 0; i < own.size(); i++) {
			if (own.get(i).itemLen() != peer.get(i).itemLen()) {
				throw new TopologyException(what + " item length mismatch at " + what + "[" + i + "]: prefill "
						+ own.get(i).itemLen() + ", decode " + peer.get(i).itemLen());
			}
		}
	}

	/**
	 * Checks a decode rank's request against the layout it registered.
	 *
	 * @return why it cannot be served, or null
	 */
	String check(int[] pages, int auxRow, int[][] stateLists) {
		if (pages.length > dstPages) {
			// Distinct pages cannot outnumber the pages decode registered: such a request only holds memory here.
			return pages.length + " destination pages, more than the " + dstPages + " decode registered";
		}
		for (int p : pages) {
			if (p < 0 || p >= dstPages) {
				return "destination page " + p + " outside decode's 0.." + (dstPages - 1);
			}
		}
		Integer twice = StateLists.repeated(pages);
		if (twice != null) {
			// Each position lands whole in its page: a page listed twice would be written twice.
			return "destination page " + twice + " listed twice (expected: distinct pages)";
		}
		if (auxRow >= 0) {
			for (RegionLayout a : dstAux) {
				if (auxRow >= a.itemCount()) {
					return "destination aux row " + auxRow + " outside decode's 0.." + (a.itemCount() - 1);
				}
			}
		}
		return state.checkDestinations(stateLists);
	}

	/**
	 * Queues the KV blocks of one chunk for one destination.
	 *
	 * @return payload bytes queued
	 */
	long sendKv(BlockOutlet conn, long room, int[] srcPages, int[] dstPages) {
		return sendKv(conn, room, srcPages, dstPages, null);
	}

	/**
	 * Queues the KV blocks of one chunk for one destination, restricted to some of this rank's KV buffers (one layer's,
	 * when the chunk goes layer by layer).
	 *
	 * @param srcRegions positions in this rank's KV buffer list, or null for all of them
	 * @return payload bytes queued
	 */
	long sendKv(BlockOutlet conn, long room, int[] srcPages, int[] dstPages, int[] srcRegions) {
		if (srcPages.length != dstPages.length && pageSize == dstPageSize && dcpSize == 1) {
			throw new IllegalArgumentException("page lists : " + srcPages.length + " source pages, " + dstPages.length
					+ " destination pages (expected: the same length)");
		}
		return sendKv(conn, room, srcPages, 0, dstPages, false, srcRegions);
	}

	/**
	 * Queues the KV blocks of one chunk for one destination, its tokens re-paged when the page sizes differ.
	 *
	 * @param srcPages the chunk's pages to send, in room order
	 * @param first the position of {@code srcPages[0]} among the room's pages after decode's prefix
	 * @param dstAll every destination page decode asked for (after its prefix)
	 * @param last whether {@code srcPages} ends with the room's last page (decode's last page is then filled up)
	 * @param srcRegions positions in this rank's KV buffer list, or null for all of them
	 * @return payload bytes queued
	 */
	long sendKv(BlockOutlet conn, long room, int[] srcPages, int first, int[] dstAll, boolean last, int[] srcRegions) {
		List<SlotRun> runs = dcpSize > 1 ? DcpRelayout.runs(srcPages, first, pageSize, dstAll, dcpSize, dcpRank, last)
				: Repaging.runs(srcPages, first, pageSize, dstAll, dstPageSize, last);
		long bytes = 0;
		for (int i = 0; i < src.length; i++) {
			if (srcRegions != null && !contains(srcRegions, srcBuffer[i])) {
				continue;
			}
			for (SlotRun run : runs) {
				bytes += sendRun(conn, room, i, run);
			}
		}
		return bytes;
	}

	/** @return whether {@code srcPages} pages after decode's prefix start at tokens that {@code dstPages} hold */
	boolean fits(long srcPages, long dstPages) {
		return dcpSize > 1 ? DcpRelayout.fits(srcPages, dstPages, pageSize, dcpSize, dcpRank)
				: Repaging.fits(srcPages, pageSize, dstPages, dstPageSize);
	}

	/** @return whether the room's {@code srcPages} pages after decode's prefix are as many tokens as decode's */
	boolean matches(long srcPages, long dstPages) {
		return dcpSize > 1 ? DcpRelayout.matches(srcPages, dstPages, pageSize, dcpSize, dcpRank)
				: Repaging.matches(srcPages, pageSize, dstPages, dstPageSize);
	}

	/**
	 * @return whether prefix tokens fill whole pages on both sides; with decode DCP, whole virtual pages of page size
	 *         × DCP size (SGLang's {@code build_dcp_token_transfer_plan})
	 */
	boolean wholePages(int prefixLen) {
		return prefixLen % pageSize == 0 && prefixLen % dstPageSize == 0
				&& DcpRelayout.alignedPrefix(prefixLen, dstPageSize, dcpSize);
	}

	/** @return decode's DCP size (1 without decode context parallelism) */
	int dcpSize() {
		return dcpSize;
	}

	/** @return decode's tokens per page */
	int dstPageSize() {
		return dstPageSize;
	}

	private static boolean contains(int[] values, int value) {
		for (int v : values) {
			if (v == value) {
				return true;
			}
		}
		return false;
	}

	private long sendRun(BlockOutlet conn, long room, int pair, SlotRun run) {
		MemoryRegion s = src[pair];
		int srcToken = s.itemLen() / pageSize;
		int dstToken = dstItemLen[pair] / dstPageSize;
		HeadSlice slice = slices[pair];
		if (relayout[pair] != null) {
			return sendRelaid(conn, room, pair, run, slice);
		}
		boolean wholeTokens = slice == null || slice.sliceBytes() == srcToken && slice.sliceBytes() == dstToken;
		long tokenBytes = wholeTokens ? srcToken : slice.sliceBytes();
		long maxTokens = Math.max(1, MAX_BLOCK_BYTES / tokenBytes);
		if (maxTokens > dstPageSize) {
			// Whole destination pages per block: the ledger counts whole pages with one counter each.
			maxTokens -= maxTokens % dstPageSize;
		}
		long bytes = 0;
		for (long done = 0; done < run.tokens(); done += maxTokens) {
			int n = (int) Math.min(maxTokens, run.tokens() - done);
			long srcSlot = run.srcSlot() + done;
			long dstSlot = run.dstSlot() + done;
			long srcAddress = s.itemAddress(srcSlot / pageSize) + srcSlot % pageSize * srcToken;
			if (wholeTokens) {
				int length = Math.toIntExact((long) n * srcToken);
				conn.sendKv(room, dst[pair], dstSlot * dstToken, length, srcAddress);
				bytes += length;
				continue;
			}
			long headOffSrc = (long) slice.srcHeadOffset() * slice.headBytes();
			long headOffDst = (long) slice.dstHeadOffset() * slice.headBytes();
			// Tokens of a run are adjacent, so every token sits one token stride after the previous.
			DataBlock block = new DataBlock(new DataHeader(room, RegionKind.KV, dst[pair],
					dstSlot * dstToken + headOffDst, slice.sliceBytes(), dstToken, n), srcAddress + headOffSrc,
					srcToken, conn.gate());
			conn.send(block);
			bytes += block.header().payloadLength();
		}
		return bytes;
	}

	/** Queues one run of a pair whose bytes are re-laid: one strided block per head and page stretch. */
	private long sendRelaid(BlockOutlet conn, long room, int pair, SlotRun run, HeadSlice slice) {
		LayoutTranslation.Side s = relayout[pair][0];
		LayoutTranslation.Side d = relayout[pair][1];
		long base = src[pair].address();
		long[] bytes = { 0 };
		LayoutTranslation.plan(s, d, slice == null ? 0 : slice.srcHeadOffset(),
				slice == null ? 0 : slice.dstHeadOffset(), slice == null ? s.heads() : slice.numHeads(), run.srcSlot(),
				run.dstSlot(), run.tokens(), MAX_BLOCK_BYTES, (from, fromStride, to, toStride, chunkLen, count) -> {
					DataBlock block = new DataBlock(new DataHeader(room, RegionKind.KV, dst[pair], to, chunkLen,
							toStride, count), base + from, fromStride, conn.gate());
					conn.send(block);
					bytes[0] += block.header().payloadLength();
				});
		return bytes[0];
	}

	/**
	 * Queues the state slots of the last chunk.
	 *
	 * @return payload bytes queued
	 */
	long sendState(BlockOutlet conn, long room, int[][] srcLists, int[][] dstLists, java.util.function.Consumer<String> warn) {
		return state.send(conn, room, srcLists, dstLists, warn);
	}

	/** @return why the last chunk's state cannot go to that destination, or null */
	String checkState(int[][] srcLists, int[][] dstLists) {
		return state.checkCounts(srcLists, dstLists);
	}

	/**
	 * Queues the aux rows of the last chunk.
	 *
	 * @return payload bytes queued
	 */
	long sendAux(BlockOutlet conn, long room, int srcRow, int dstRow) {
		if (srcRow < 0 || dstRow < 0) {
			return 0;
		}
		long bytes = 0;
		for (int i = 0; i < srcAux.size(); i++) {
			MemoryRegion s = srcAux.get(i);
			bytes += s.itemLen();
			conn.send(new DataBlock(new DataHeader(room, RegionKind.AUX, i, (long) dstRow * dstAux.get(i).itemLen(),
					s.itemLen(), 0, 1), s.itemAddress(srcRow), 0, conn.gate()));
		}
		return bytes;
	}

	/** @return whether the prefill rank has state buffers to move */
	boolean hasState() {
		return !state.isEmpty();
	}

	/** @return a message naming the plan, for debug logs */
	@Override
	public String toString() {
		return "TransferPlan{pairs=" + src.length + ", headSliced=" + (slices.length > 0 && slices[0] != null) + '}';
	}
}
