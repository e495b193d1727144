package io.kvferry.internal;

import java.util.List;
import java.util.function.Consumer;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.StateKind;
import io.kvferry.TopologyException;
import io.kvferry.internal.topology.HeadSlice;
import io.kvferry.internal.topology.HeadSlicing;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.RegionLayout;

/**
 * How one prefill rank's state regions map onto one decode rank's, decided at the handshake: both sides must declare
 * the same state kinds in the same order; Mamba slots are sliced along each tensor's TP dimension when attention TP
 * sizes differ; SWA and DSA pages move whole (non-MLA SWA/DSA state across different TP sizes is refused, as SGLang
 * refuses it). Immutable.
 */
final class StatePlan {

	private final List<MemoryRegion> src;
	private final List<RegionLayout> dst;
	private final List<StateKind> kinds;
	private final HeadSlice[] slices;

	private StatePlan(List<MemoryRegion> src, List<RegionLayout> dst, List<StateKind> kinds, HeadSlice[] slices) {
		this.src = src;
		this.dst = dst;
		this.kinds = kinds;
		this.slices = slices;
	}

	/** @throws TopologyException naming the first incompatible values */
	static StatePlan of(KVArgs args, ParallelLayout own, PeerLayout decode) {
		List<MemoryRegion> src = args.stateRegions();
		if (src.isEmpty()) {
			return new StatePlan(src, decode.state(), args.stateKinds(), new HeadSlice[0]);
		}
		if (src.size() != decode.state().size()) {
			throw new TopologyException("state buffer count mismatch: prefill " + src.size() + ", decode "
					+ decode.state().size());
		}
		if (!args.stateKinds().equals(decode.stateKinds())) {
			throw new TopologyException("state kind order mismatch: prefill " + describe(args.stateKinds())
					+ ", decode " + describe(decode.stateKinds())
					+ " (expected: the same kind for each state region, in the same order on both sides)");
		}
		int p = own.attnTpSize();
		int d = decode.parallel().attnTpSize();
		HeadSlice[] slices = new HeadSlice[src.size()];
		for (int i = 0; i < src.size(); i++) {
			StateKind kind = args.stateKinds().isEmpty() ? null : args.stateKinds().get(i);
			int srcLen = src.get(i).itemLen();
			int dstLen = decode.state().get(i).itemLen();
			if (p != d && kind == StateKind.MAMBA) {
				slices[i] = mambaSlice(args, own, decode, i, srcLen, dstLen);
				continue;
			}
			if (p != d && !args.isMla() && (kind == StateKind.SWA || kind == StateKind.DSA)) {
				throw new TopologyException(kind + " state does NOT support PD different TP sizes for a non-MLA model: "
						+ "prefill attn_tp_size=" + p + ", decode attn_tp_size=" + d
						+ " (expected: equal attention TP sizes, as SGLang requires)");
			}
			if (srcLen != dstLen) {
				throw new TopologyException("state item length mismatch at state[" + i + "]: prefill " + srcLen
						+ ", decode " + dstLen);
			}
		}
		return new StatePlan(src, decode.state(), args.stateKinds(), slices);
	}

	private static HeadSlice mambaSlice(KVArgs args, ParallelLayout own, PeerLayout decode, int i, int srcLen,
			int dstLen) {
		int p = own.attnTpSize();
		int d = decode.parallel().attnTpSize();
		if (args.stateTpDims().isEmpty() || decode.stateTpDims().isEmpty()) {
			throw new TopologyException("MAMBA state[" + i + "] across attn_tp_size " + p + " -> " + d
					+ " needs the TP dimension of each state tensor on both sides (expected: stateTpDims declared by"
					+ " prefill and decode)");
		}
		if (args.isMla() && p > d) {
			throw new TopologyException("MAMBA state[" + i + "] with MLA and prefill attn_tp_size " + p
					+ " > decode attn_tp_size " + d + ": only one prefill rank of each group transfers, so the other"
					+ " shards of the state would be missing (expected: equal TP sizes, or decode TP larger)");
		}
		int srcDim = args.stateTpDims().get(i);
		int dstDim = decode.stateTpDims().get(i);
		if ((long) srcDim * p != (long) dstDim * d) {
			throw new TopologyException("MAMBA state[" + i + "] TP dimension mismatch: prefill " + srcDim + " × tp "
					+ p + ", decode " + dstDim + " × tp " + d + " (expected: the same model dimension)");
		}
		// A state tensor's TP-sharded dimension is cut like KV heads: its units are the "heads", one "token" per slot.
		return HeadSlicing.plan(srcDim * p, p, d, own.attnTpRank(), decode.engineRank() % d, srcLen, dstLen, 1);
	}

	private static String describe(List<StateKind> kinds) {
		return kinds.isEmpty() ? "(no kinds declared)" : kinds.toString();
	}

	/** @return whether there is state to move */
	boolean isEmpty() {
		return src.isEmpty();
	}

	/**
	 * Checks a decode request's state destinations against its registered regions.
	 *
	 * @return why it cannot be served, or null
	 */
	String checkDestinations(int[][] lists) {
		if (src.isEmpty()) {
			return null;
		}
		if (lists.length != StateLists.components(kinds)) {
			return lists.length + " state index lists (expected " + StateLists.components(kinds) + ")";
		}
		int[][] perRegion = StateLists.perRegion(kinds, dst.size(), lists);
		for (int i = 0; i < dst.size(); i++) {
			for (int slot : perRegion[i]) {
				if (slot < 0 || slot >= dst.get(i).itemCount()) {
					return "destination state slot " + slot + " outside decode's 0.." + (dst.get(i).itemCount() - 1)
							+ " of state[" + i + "]";
				}
			}
			Integer twice = TransferPlan.repeated(perRegion[i]);
			if (twice != null) {
				return "destination state slot " + twice + " listed twice in state[" + i + "] (expected: distinct "
						+ "slots)";
			}
		}
		return null;
	}

	/**
	 * Checks the last chunk's state sources against a destination's lists: Mamba and undeclared state need one
	 * destination per source; SWA and DSA lists may be longer on prefill (the common prefix moves), never on decode.
	 *
	 * @return why the room cannot be served, or null
	 */
	String checkCounts(int[][] srcLists, int[][] dstLists) {
		if (src.isEmpty()) {
			return null;
		}
		for (int c = 0; c < srcLists.length && c < dstLists.length; c++) {
			StateKind kind = StateLists.kindOf(kinds, c);
			boolean pages = kind == StateKind.SWA || kind == StateKind.DSA;
			if (!pages && srcLists[c].length != dstLists[c].length) {
				return (kind == null ? "state" : kind + " state") + " slot count mismatch: prefill "
						+ srcLists[c].length + ", decode " + dstLists[c].length;
			}
			if (pages && srcLists[c].length < dstLists[c].length) {
				// Decode would wait for pages nobody writes.
				return kind + " state page count mismatch: decode asked for " + dstLists[c].length
						+ " pages, prefill has " + srcLists[c].length + " (expected: at most as many as prefill has)";
			}
		}
		return srcLists.length == dstLists.length ? null
				: "state index lists: prefill " + srcLists.length + ", decode " + dstLists.length;
	}

	/**
	 * Queues the state of the last chunk, region by region.
	 *
	 * @param warn told once per component whose SWA/DSA lists differ in length
	 * @return payload bytes queued
	 */
	long send(BlockOutlet conn, long room, int[][] srcLists, int[][] dstLists, Consumer<String> warn) {
		long bytes = 0;
		boolean[] warned = new boolean[srcLists.length];
		for (int i = 0; i < src.size(); i++) {
			int c = StateLists.componentOf(kinds, i);
			int[] from = srcLists[c];
			int[] to = dstLists[c];
			int n = Math.min(from.length, to.length);
			if (from.length != to.length && !warned[c]) {
				warned[c] = true;
				warn.accept(StateLists.kindOf(kinds, c) + " state index length mismatch for room " + room + ": prefill "
						+ from.length + ", decode " + to.length + "; truncating to the common prefix of " + n);
			}
			MemoryRegion s = src.get(i);
			int dstLen = dst.get(i).itemLen();
			HeadSlice slice = slices[i];
			for (int j = 0; j < n; j++) {
				DataBlock block;
				if (slice == null) {
					block = new DataBlock(new DataHeader(room, RegionKind.STATE, i, (long) to[j] * dstLen, s.itemLen(),
							0, 1), s.itemAddress(from[j]), 0, conn.gate());
				}
				else {
					block = new DataBlock(new DataHeader(room, RegionKind.STATE, i,
							(long) to[j] * dstLen + slice.dstByteOffset(), slice.sliceBytes(), 0, 1),
							s.itemAddress(from[j]) + slice.srcByteOffset(), 0, conn.gate());
				}
				conn.send(block);
				bytes += block.header().payloadLength();
			}
		}
		return bytes;
	}
}
