package io.kvferry.internal;

import java.util.Arrays;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.TopologyException;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.RegionLayout;
import io.kvferry.spi.SendGate;
import io.kvferry.internal.topology.HeadSlice;
import io.kvferry.internal.topology.HeadSlicing;
import io.kvferry.internal.topology.LayerPairing;
import io.kvferry.internal.topology.LayerSpan;
import io.kvferry.internal.topology.PageRun;
import io.kvferry.internal.topology.PageRuns;
import io.kvferry.internal.topology.RegionPair;

/**
 * How one prefill rank's regions map onto one decode rank's, decided once per connection at the handshake: which
 * decode KV buffer each prefill buffer fills (PP stages, draft layers) and, for MHA with different TP sizes, which
 * heads of each token. Turns a chunk's page lists into data blocks: one block per (page run, layer buffer), a head
 * slice moving as one strided block rather than one write per token.
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
	private final int pageSize;
	private final long dstPages;
	private final List<MemoryRegion> srcAux;
	private final List<RegionLayout> dstAux;
	private final StatePlan state;

	private TransferPlan(MemoryRegion[] src, int[] srcBuffer, int[] dst, long[] dstItems, int[] dstItemLen,
			HeadSlice[] slices, int pageSize, List<MemoryRegion> srcAux, List<RegionLayout> dstAux, StatePlan state) {
		this.src = src;
		this.srcBuffer = srcBuffer;
		this.dst = dst;
		this.dstItemLen = dstItemLen;
		this.slices = slices;
		this.pageSize = pageSize;
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
		if (decode.parallel().attnCpSize() != 1) {
			throw new TopologyException("decode attn_cp_size=" + decode.parallel().attnCpSize()
					+ " (expected: 1; context parallelism is a prefill-only dimension)");
		}
		if (decode.pageSize() != args.pageSize()) {
			throw new TopologyException("page size mismatch: prefill page_size=" + args.pageSize()
					+ ", decode page_size=" + decode.pageSize());
		}
		if (decode.mla() != args.isMla()) {
			throw new TopologyException("MLA mismatch: prefill mla=" + args.isMla() + ", decode mla=" + decode.mla());
		}
		if (!decode.dtype().equals(args.dtype())) {
			throw new TopologyException("KV cache dtype mismatch: prefill " + args.dtype() + ", decode "
					+ decode.dtype());
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
		// Pairs by model layer: right for any PP split and any draft layers (SGLang's positional rule is not: it mis-pairs V buffers of uneven stage splits).
		List<RegionPair> pairs = LayerPairing.pairByLayer(
				new LayerSpan(args.kvRegions().size(), args.prefillStartLayer(), args.draftLayers()),
				new LayerSpan(decode.kv().size(), decode.startLayer(), decode.draftLayers()), args.isMla());
		if (dsaLayerSplit) {
			pairs = CpLayers.own(pairs, args, own);
		}
		int n = pairs.size();
		MemoryRegion[] src = new MemoryRegion[n];
		int[] srcBuffer = new int[n];
		int[] dst = new int[n];
		int[] dstLen = new int[n];
		HeadSlice[] slices = new HeadSlice[n];
		boolean sliced = !args.isMla() && p != d;
		for (int i = 0; i < n; i++) {
			RegionPair pair = pairs.get(i);
			src[i] = args.kvRegions().get(pair.src());
			srcBuffer[i] = pair.src();
			dst[i] = pair.dst();
			dstLen[i] = decode.kv().get(pair.dst()).itemLen();
			if (sliced) {
				slices[i] = HeadSlicing.plan(args.totalKvHeadNum(), p, d, own.attnTpRank(),
						decode.engineRank() % d, src[i].itemLen(), dstLen[i], args.pageSize());
			}
			else if (src[i].itemLen() != dstLen[i]) {
				throw new TopologyException("KV item length mismatch: prefill kv[" + pair.src() + "] "
						+ src[i].itemLen() + " bytes, decode kv[" + pair.dst() + "] " + dstLen[i] + " bytes");
			}
		}
		checkSame("aux", args.auxRegions(), decode.aux());
		StatePlan state = StatePlan.of(args, own, decode);
		long[] dstItems = decode.kv().stream().mapToLong(RegionLayout::itemCount).toArray();
		return new TransferPlan(src, srcBuffer, dst, dstItems, dstLen, slices, args.pageSize(), args.auxRegions(),
				decode.aux(),
				state);
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
		if (auxRow >= 0) {
			for (RegionLayout a : dstAux) {
				if (auxRow >= a.itemCount()) {
					return "destination aux row " + auxRow + " outside decode's 0.." + (a.itemCount() - 1);
				}
			}
		}
		return state.checkDestinations(stateLists);
	}

	/** Where a plan's blocks go: one destination's connection, in order, behind the room's gate. */
	interface Outlet {
		void send(DataBlock block);

		/** @return the gate the room's blocks are sent behind */
		SendGate gate();
	}

	/**
	 * Queues the KV blocks of one chunk for one destination.
	 *
	 * @return payload bytes queued
	 */
	long sendKv(Outlet conn, long room, int[] srcPages, int[] dstPages) {
		return sendKv(conn, room, srcPages, dstPages, null);
	}

	/**
	 * Queues the KV blocks of one chunk for one destination, restricted to some of this rank's KV buffers (one layer's,
	 * when the chunk goes layer by layer).
	 *
	 * @param srcRegions positions in this rank's KV buffer list, or null for all of them
	 * @return payload bytes queued
	 */
	long sendKv(Outlet conn, long room, int[] srcPages, int[] dstPages, int[] srcRegions) {
		List<PageRun> runs = PageRuns.group(srcPages, dstPages);
		long bytes = 0;
		for (int i = 0; i < src.length; i++) {
			if (srcRegions != null && !contains(srcRegions, srcBuffer[i])) {
				continue;
			}
			for (PageRun run : runs) {
				bytes += sendRun(conn, room, i, run.srcStart(), run.dstStart(), run.length());
			}
		}
		return bytes;
	}

	private static boolean contains(int[] values, int value) {
		for (int v : values) {
			if (v == value) {
				return true;
			}
		}
		return false;
	}

	private long sendRun(Outlet conn, long room, int pair, int srcStart, int dstStart, int pages) {
		MemoryRegion s = src[pair];
		int srcLen = s.itemLen();
		int dstLen = dstItemLen[pair];
		HeadSlice slice = slices[pair];
		boolean wholeTokens = slice == null || slice.sliceBytes() == srcLen / pageSize
				&& slice.sliceBytes() == dstLen / pageSize;
		long pageBytes = wholeTokens ? srcLen : (long) slice.sliceBytes() * pageSize;
		int maxPages = (int) Math.max(1, MAX_BLOCK_BYTES / pageBytes);
		long bytes = 0;
		for (int done = 0; done < pages; done += maxPages) {
			int n = Math.min(maxPages, pages - done);
			long srcPage = (long) srcStart + done;
			long dstPage = (long) dstStart + done;
			DataBlock block;
			if (wholeTokens) {
				block = new DataBlock(new DataHeader(room, RegionKind.KV, dst[pair], dstPage * dstLen,
						Math.toIntExact((long) n * srcLen), 0, 1), s.itemAddress(srcPage), 0, conn.gate());
			}
			else {
				long headOffSrc = (long) slice.srcHeadOffset() * slice.headBytes();
				long headOffDst = (long) slice.dstHeadOffset() * slice.headBytes();
				// Pages of a run are adjacent, so every token of the run sits one token stride after the previous.
				block = new DataBlock(new DataHeader(room, RegionKind.KV, dst[pair], dstPage * dstLen + headOffDst,
						slice.sliceBytes(), dstLen / pageSize, n * pageSize), s.itemAddress(srcPage) + headOffSrc,
						srcLen / pageSize, conn.gate());
			}
			conn.send(block);
			bytes += block.header().payloadLength();
		}
		return bytes;
	}

	/**
	 * Queues the state slots of the last chunk.
	 *
	 * @return payload bytes queued
	 */
	long sendState(Outlet conn, long room, int[][] srcLists, int[][] dstLists, java.util.function.Consumer<String> warn) {
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
	long sendAux(Outlet conn, long room, int srcRow, int dstRow) {
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
