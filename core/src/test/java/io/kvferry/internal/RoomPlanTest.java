package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.StateKind;
import io.kvferry.TopologyException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.RegionLayout;
import org.junit.jupiter.api.Test;

/** How many times a room's ranks write each granted byte, as decode plans it from their layouts. */
class RoomPlanTest {

	// Decode TP 1: one K and one V buffer of 64-byte pages (2 heads × 8 bytes × 4 tokens), 16-byte aux rows and a
	// 32-byte Mamba slot whose TP dimension is 8.
	private final KVArgs decodeArgs = KVArgs.builder().pageSize(4).kvHeads(2, 2)
			.kvRegions(List.of(region(1, 64), region(2, 64))).auxRegions(List.of(region(3, 16)))
			.stateRegions(List.of(region(4, 32))).stateKinds(List.of(StateKind.MAMBA)).stateTpDims(List.of(8)).build();
	private final PeerLayout decode = PeerLayout.of(decodeArgs, ParallelLayout.SINGLE);

	private static MemoryRegion region(int n, int itemLen) {
		return MemoryRegion.of((long) n << 24, 8L * itemLen, itemLen);
	}

	/** A prefill rank of TP {@code tp}: each holds its share of the heads and of the Mamba dimension. */
	private static PeerLayout prefill(int tp, int rank, boolean aux) {
		int heads = 2 / tp;
		return new PeerLayout(rank, ParallelLayout.tp(tp, rank), 4, false, "bf16", heads, 2, 0, 0,
				List.of(new RegionLayout(32 * heads, 8), new RegionLayout(32 * heads, 8)),
				aux ? List.of(new RegionLayout(16, 8)) : List.of(), List.of(new RegionLayout(32 / tp, 8)),
				List.of(StateKind.MAMBA), List.of(8 / tp), false, false);
	}

	@Test
	void twoPrefillRanksFillEachPageOnceBetweenThemAndEachSendTheAuxRowAndHalfTheSlot() {
		GrantLedger l = RoomPlan.ledger(decodeArgs, decode, new int[] { 1, 2 }, 3, new int[][] { { 5 } },
				List.of(new RoomPlan.Source(prefill(2, 0, true), 0), new RoomPlan.Source(prefill(2, 1, true), 0)));
		assertThat(l.times(RegionKind.KV, 0)).isEqualTo(1);
		assertThat(l.times(RegionKind.KV, 1)).isEqualTo(1);
		assertThat(l.times(RegionKind.AUX, 0)).isEqualTo(2);
		assertThat(l.times(RegionKind.STATE, 0)).isEqualTo(1);
		assertThat(l.expected(RegionKind.AUX, 0)).isEqualTo(32);
		assertThat(l.expected(RegionKind.KV, 1)).isEqualTo(128);
	}

	@Test
	void onlyRanksWithAuxBuffersCountForTheAuxRow() {
		GrantLedger l = RoomPlan.ledger(decodeArgs, decode, new int[] { 1 }, 3, new int[][] { {} },
				List.of(new RoomPlan.Source(prefill(2, 0, true), 0), new RoomPlan.Source(prefill(2, 1, false), 0)));
		assertThat(l.times(RegionKind.AUX, 0)).isEqualTo(1);
		assertThat(l.times(RegionKind.STATE, 0)).as("no slot asked for").isZero();
		assertThat(l.expected(RegionKind.STATE, 0)).isZero();
	}

	@Test
	void anAuxRowOrSlotNoRankWritesIsRefusedBeforeTheRequestGoesOut() {
		List<RoomPlan.Source> noAux = List.of(new RoomPlan.Source(prefill(1, 0, false), 0));
		assertThatThrownBy(() -> RoomPlan.ledger(decodeArgs, decode, new int[] { 1 }, 3, new int[][] { {} }, noAux))
				.isInstanceOf(TopologyException.class)
				.hasMessage("decode asked for aux row 3, but none of the 1 prefill ranks asked registers aux buffers");
		PeerLayout noState = new PeerLayout(0, ParallelLayout.SINGLE, 4, false, "bf16", 2, 2, 0, 0,
				List.of(new RegionLayout(64, 8), new RegionLayout(64, 8)), List.of(), List.of());
		assertThatThrownBy(() -> RoomPlan.ledger(decodeArgs, decode, new int[] { 1 }, -1, new int[][] { { 5 } },
				List.of(new RoomPlan.Source(noState, 0)))).isInstanceOf(TopologyException.class)
				.hasMessage("decode asked for 1 slots of state buffer 0, but none of the 1 prefill ranks asked sends "
						+ "state there");
	}

	@Test
	void aKvBufferNoRankFillsTakesNoWrite() {
		GrantLedger l = GrantLedger.of(decodeArgs, new int[] { 1 }, -1, new int[][] { {} }, new int[] { 1, 0 }, 0,
				new int[] { 0 });
		l.reserve(new DataHeader(1, RegionKind.KV, 0, 64, 64, 0, 1));
		assertThatThrownBy(() -> l.reserve(new DataHeader(1, RegionKind.KV, 1, 64, 64, 0, 1)))
				.isInstanceOf(WriteRefused.class)
				.hasMessage("KV buffer 1 receives nothing for this room (no prefill rank the room asked fills it)");
		l.landed(RegionKind.KV, 0, 64);
		assertThat(l.incomplete()).isNull();
	}

	@Test
	void whatIsMissingNamesTheItemsAndTheirBytesPartialWritesIncluded() {
		GrantLedger l = GrantLedger.of(decodeArgs, new int[] { 1, 2 }, -1, new int[][] { {} }, new int[] { 1, 1 }, 0,
				new int[] { 0 });
		l.reserve(new DataHeader(1, RegionKind.KV, 0, 64, 64, 0, 1));
		l.reserve(new DataHeader(1, RegionKind.KV, 0, 128 + 8, 16, 32, 2));
		l.landed(RegionKind.KV, 0, 96);
		assertThat(l.incomplete()).isEqualTo("KV buffer 0: 96 of 128 bytes landed; 1 of 2 granted items short: "
				+ "2 (32 of 64 bytes)");
	}

	@Test
	void aDecodeLayerNoRankWritesIsRefusedBeforeTheRequestGoesOut() {
		// Decode: 4 layers; the one prefill rank asked holds layer 0 only, same heads, head size and page size.
		PeerLayout four = mha(4, 0, 0);
		KVArgs fourArgs = args(4, 0);
		assertThatThrownBy(() -> RoomPlan.ledger(fourArgs, four, new int[] { 1 }, -1, new int[0][],
				List.of(new RoomPlan.Source(mha(1, 0, 0), 0)))).isInstanceOf(TopologyException.class)
				.hasMessage("decode KV buffer 1 (layer 1 K) is written by none of the 1 prefill ranks asked: decode "
						+ "holds layers 0..3 (4 layers), the prefill ranks [0..0 (1 layers)] (expected: together every "
						+ "layer of decode's)");
		// Two PP stages of two layers each fill all four between them: a decode rank of PP 1 asks both.
		GrantLedger both = RoomPlan.ledger(fourArgs, four, new int[] { 1 }, -1, new int[0][],
				List.of(new RoomPlan.Source(mha(2, 0, 0), 0), new RoomPlan.Source(mha(2, 2, 0), 0)));
		for (int r = 0; r < 8; r++) {
			assertThat(both.times(RegionKind.KV, r)).as("buffer %d", r).isEqualTo(1);
		}
		assertThatThrownBy(() -> RoomPlan.ledger(fourArgs, four, new int[] { 1 }, -1, new int[0][],
				List.of(new RoomPlan.Source(mha(2, 2, 0), 0)))).isInstanceOf(TopologyException.class)
				.hasMessageStartingWith("decode KV buffer 0 (layer 0 K) is written by none of the 1 prefill ranks");
	}

	@Test
	void onlyTheDecodeRanksOwnDraftLayersMayStayUnwritten() {
		// Decode: 2 main layers and 1 draft layer [K0 K1 V0 V1 dK0 dV0]; prefill: the 2 main layers, no draft model.
		GrantLedger l = RoomPlan.ledger(args(2, 1), mha(2, 0, 1), new int[] { 1 }, -1, new int[0][],
				List.of(new RoomPlan.Source(mha(2, 0, 0), 0)));
		assertThat(l.times(RegionKind.KV, 3)).isEqualTo(1);
		assertThat(l.times(RegionKind.KV, 4)).as("draft K").isZero();
		assertThat(l.times(RegionKind.KV, 5)).as("draft V").isZero();
		assertThat(l.landedItem(4, 1)).as("no byte reached the draft layer").isFalse();
		// With a draft model on both sides, prefill fills the draft layer too.
		GrantLedger both = RoomPlan.ledger(args(2, 1), mha(2, 0, 1), new int[] { 1 }, -1, new int[0][],
				List.of(new RoomPlan.Source(mha(2, 0, 1), 0)));
		assertThat(both.times(RegionKind.KV, 5)).isEqualTo(1);
	}

	/** MHA layout of {@code layers} main layers from {@code start} and {@code draft} draft layers, TP 1, 64-byte pages. */
	private static PeerLayout mha(int layers, int start, int draft) {
		List<RegionLayout> kv = new ArrayList<>();
		for (int i = 0; i < 2 * (layers + draft); i++) {
			kv.add(new RegionLayout(64, 8));
		}
		return new PeerLayout(0, ParallelLayout.SINGLE, 4, false, "bf16", 2, 2, start, draft, kv, List.of(),
				List.of());
	}

	private static KVArgs args(int layers, int draft) {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int i = 0; i < 2 * (layers + draft); i++) {
			kv.add(region(10 + i, 64));
		}
		return KVArgs.builder().pageSize(4).kvHeads(2, 2).draftLayers(draft).kvRegions(kv).build();
	}
}
