package io.kvferry.transport.netty.internal.frame;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.kvferry.KVLayout;
import io.kvferry.ParallelLayout;
import io.kvferry.StateKind;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionLayout;
import io.netty.buffer.ByteBuf;

/**
 * The {@code layout} field of {@code HELLO} and {@code HELLO_ACK}: a rank's {@link PeerLayout}.
 * <pre>
 * i32 engineRank,
 * 8 x i32 parallel (attnTpSize, attnTpRank, attnDpSize, attnDpRank, systemDpSize, systemDpRank, ppSize, ppRank),
 * i32 pageSize, bool mla, string dtype, i32 kvHeadNum, i32 totalKvHeadNum, i32 startLayer, i32 draftLayers,
 * region[] kv, region[] aux, region[] state,
 * 2 x i32 cp (attnCpSize, attnCpRank), int[] stateKinds (StateKind ordinals), int[] stateTpDims,
 * bool allCpRanksTransfer, bool dsaCacheLayerSplit, string modelId, i32 modelLayers, u8 kvLayout (KVLayout ordinal)
 * </pre>
 * Strings and lists are bounded by {@link PeerLayout}'s limits before anything is allocated for them; the record
 * checks the values.
 */
final class PeerLayoutCodec {

	private static final int PARALLEL_LENGTH = 8 * 4;

	private PeerLayoutCodec() {
	}

	static long length(PeerLayout l) {
		return 4 + PARALLEL_LENGTH + 4 + 1 + Fields.stringLength(l.dtype()) + 4 + 4 + 4 + 4
				+ Fields.regionsLength(l.kv()) + Fields.regionsLength(l.aux()) + Fields.regionsLength(l.state()) + 8
				+ Fields.intsLength(l.stateKinds().size()) + Fields.intsLength(l.stateTpDims().size()) + 2
				+ Fields.stringLength(l.modelId()) + 4 + 1;
	}

	static void write(ByteBuf buf, PeerLayout l) {
		buf.writeInt(l.engineRank());
		ParallelLayout p = l.parallel();
		buf.writeInt(p.attnTpSize());
		buf.writeInt(p.attnTpRank());
		buf.writeInt(p.attnDpSize());
		buf.writeInt(p.attnDpRank());
		buf.writeInt(p.systemDpSize());
		buf.writeInt(p.systemDpRank());
		buf.writeInt(p.ppSize());
		buf.writeInt(p.ppRank());
		buf.writeInt(l.pageSize());
		buf.writeBoolean(l.mla());
		Fields.writeString(buf, l.dtype());
		buf.writeInt(l.kvHeadNum());
		buf.writeInt(l.totalKvHeadNum());
		buf.writeInt(l.startLayer());
		buf.writeInt(l.draftLayers());
		Fields.writeRegions(buf, l.kv());
		Fields.writeRegions(buf, l.aux());
		Fields.writeRegions(buf, l.state());
		buf.writeInt(p.attnCpSize());
		buf.writeInt(p.attnCpRank());
		Fields.writeInts(buf, l.stateKinds().stream().mapToInt(Enum::ordinal).toArray());
		Fields.writeInts(buf, l.stateTpDims().stream().mapToInt(Integer::intValue).toArray());
		buf.writeBoolean(l.allCpRanksTransfer());
		buf.writeBoolean(l.dsaCacheLayerSplit());
		Fields.writeString(buf, l.modelId());
		buf.writeInt(l.modelLayers());
		buf.writeByte(l.kvLayout().ordinal());
	}

	static PeerLayout read(FrameReader r) {
		int engineRank = r.i32("engineRank");
		r.need(PARALLEL_LENGTH, "parallel");
		int[] sizes = { r.i32("attnTpSize"), r.i32("attnTpRank"), r.i32("attnDpSize"), r.i32("attnDpRank"),
				r.i32("systemDpSize"), r.i32("systemDpRank"), r.i32("ppSize"), r.i32("ppRank") };
		int pageSize = r.i32("pageSize");
		boolean mla = r.bool("mla");
		String dtype = r.string("dtype", PeerLayout.MAX_DTYPE_BYTES);
		int kvHeadNum = r.i32("kvHeadNum");
		int totalKvHeadNum = r.i32("totalKvHeadNum");
		int startLayer = r.i32("startLayer");
		int draftLayers = r.i32("draftLayers");
		List<RegionLayout> kv = r.regions("kv", PeerLayout.MAX_REGIONS);
		List<RegionLayout> aux = r.regions("aux", PeerLayout.MAX_REGIONS);
		List<RegionLayout> state = r.regions("state", PeerLayout.MAX_REGIONS);
		ParallelLayout parallel = new ParallelLayout(sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5],
				sizes[6], sizes[7], r.i32("attnCpSize"), r.i32("attnCpRank"));
		List<StateKind> kinds = new ArrayList<>();
		for (int k : r.ints("stateKinds", PeerLayout.MAX_REGIONS)) {
			if (k < 0 || k >= StateKind.values().length) {
				throw r.malformed("stateKinds : " + k + " (expected: 0.." + (StateKind.values().length - 1) + ")");
			}
			kinds.add(StateKind.values()[k]);
		}
		List<Integer> dims = Arrays.stream(r.ints("stateTpDims", PeerLayout.MAX_REGIONS)).boxed().toList();
		boolean allCp = r.bool("allCpRanksTransfer");
		boolean dsaSplit = r.bool("dsaCacheLayerSplit");
		String modelId = r.string("modelId", PeerLayout.MAX_MODEL_ID_BYTES);
		int modelLayers = r.i32("modelLayers");
		int layout = r.u8("kvLayout");
		if (layout >= KVLayout.values().length) {
			throw r.malformed("kvLayout : " + layout + " (expected: 0.." + (KVLayout.values().length - 1) + ")");
		}
		return new PeerLayout(engineRank, parallel, pageSize, mla, dtype, kvHeadNum, totalKvHeadNum, startLayer,
				draftLayers, kv, aux, state, kinds, dims, allCp, dsaSplit, modelId, modelLayers,
				KVLayout.values()[layout]);
	}
}
