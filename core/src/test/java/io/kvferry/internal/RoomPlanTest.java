package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
				.isInstanceOf(GrantLedger.Refused.class)
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
}
