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
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.SendGate;
import org.junit.jupiter.api.Test;

/** Hybrid-model state at the handshake and on the last chunk: kind order, Mamba slicing, SWA/DSA pages. */
class StatePlanTest {

	// Regions that only describe memory: planning computes addresses and never touches them.
	private static final long BASE = 1L << 40;

	private static KVArgs args(boolean mla, List<StateKind> kinds, List<Integer> itemLens, List<Integer> dims) {
		List<MemoryRegion> state = new ArrayList<>();
		for (int i = 0; i < itemLens.size(); i++) {
			state.add(MemoryRegion.of(BASE + (i + 1) * (1L << 32), 16L * itemLens.get(i), itemLens.get(i)));
		}
		return KVArgs.builder().pageSize(4).kvHeads(1, 1).mla(mla)
				.kvRegions(List.of(MemoryRegion.of(BASE, 16 * 64L, 64), MemoryRegion.of(BASE << 1, 16 * 64L, 64)))
				.stateRegions(state).stateKinds(kinds).stateTpDims(dims).build();
	}

	private static StatePlan plan(KVArgs prefill, ParallelLayout p, KVArgs decode, ParallelLayout d) {
		return StatePlan.of(prefill, p, PeerLayout.of(decode, d));
	}

	@Test
	void bothSidesMustDeclareTheSameKindsInTheSameOrder() {
		KVArgs prefill = args(false, List.of(StateKind.MAMBA, StateKind.SWA), List.of(64, 64), List.of());
		KVArgs swapped = args(false, List.of(StateKind.SWA, StateKind.MAMBA), List.of(64, 64), List.of());
		KVArgs untyped = args(false, List.of(), List.of(64, 64), List.of());
		assertThatThrownBy(() -> plan(prefill, ParallelLayout.SINGLE, swapped, ParallelLayout.SINGLE))
				.isInstanceOf(TopologyException.class)
				.hasMessage("state kind order mismatch: prefill [MAMBA, SWA], decode [SWA, MAMBA] (expected: the same"
						+ " kind for each state region, in the same order on both sides)");
		assertThatThrownBy(() -> plan(prefill, ParallelLayout.SINGLE, untyped, ParallelLayout.SINGLE))
				.hasMessageContaining("prefill [MAMBA, SWA], decode (no kinds declared)");
		assertThat(plan(prefill, ParallelLayout.SINGLE, prefill, ParallelLayout.SINGLE).isEmpty()).isFalse();
	}

	@Test
	void nonMlaSwaOrDsaStateAcrossTpSizesIsRefusedAsSglangRefusesIt() {
		for (StateKind kind : new StateKind[] { StateKind.SWA, StateKind.DSA }) {
			KVArgs a = args(false, List.of(kind), List.of(64), List.of());
			assertThatThrownBy(() -> plan(a, ParallelLayout.tp(2, 0), a, ParallelLayout.tp(1, 0)))
					.isInstanceOf(TopologyException.class)
					.hasMessage(kind + " state does NOT support PD different TP sizes for a non-MLA model: prefill "
							+ "attn_tp_size=2, decode attn_tp_size=1 (expected: equal attention TP sizes, as SGLang "
							+ "requires)");
			// MLA pages are the same on every TP rank: accepted.
			KVArgs mla = args(true, List.of(kind), List.of(64), List.of());
			assertThat(plan(mla, ParallelLayout.tp(2, 0), mla, ParallelLayout.tp(1, 0)).isEmpty()).isFalse();
		}
	}

	@Test
	void mambaAcrossTpSizesNeedsEachTensorsTpDimensionAndSlicesByIt() {
		KVArgs noDims = args(false, List.of(StateKind.MAMBA), List.of(64), List.of());
		assertThatThrownBy(() -> plan(noDims, ParallelLayout.tp(1, 0), noDims, ParallelLayout.tp(2, 1)))
				.hasMessageContaining("needs the TP dimension of each state tensor on both sides");
		// 8 units of 16 bytes in the model: prefill TP 1 holds all 8 (128 bytes), decode TP 2 holds 4 (64 bytes).
		KVArgs whole = args(false, List.of(StateKind.MAMBA), List.of(128), List.of(8));
		KVArgs half = args(false, List.of(StateKind.MAMBA), List.of(64), List.of(4));
		KVArgs wrongDim = args(false, List.of(StateKind.MAMBA), List.of(64), List.of(2));
		assertThatThrownBy(() -> plan(whole, ParallelLayout.tp(1, 0), wrongDim, ParallelLayout.tp(2, 1)))
				.hasMessageContaining("MAMBA state[0] TP dimension mismatch: prefill 8 × tp 1, decode 2 × tp 2");
		StatePlan toRank1 = plan(whole, ParallelLayout.tp(1, 0), half.mutate().engineRank(1).build(),
				ParallelLayout.tp(2, 1));
		List<DataBlock> sent = new ArrayList<>();
		long bytes = toRank1.send(outlet(sent), 7, new int[][] { { 3 } }, new int[][] { { 5 } }, w -> {
		});
		assertThat(bytes).isEqualTo(64);
		// Decode rank 1 holds units 4..7: the second half of the prefill item, at the start of its own slot.
		assertThat(sent).singleElement().satisfies(b -> {
			assertThat(b.srcAddress()).isEqualTo(whole.stateRegions().get(0).itemAddress(3) + 64);
			assertThat(b.header().dstOffset()).isEqualTo(5 * 64L);
			assertThat(b.header().chunkLen()).isEqualTo(64);
		});
		KVArgs mlaWhole = args(true, List.of(StateKind.MAMBA), List.of(128), List.of(8));
		KVArgs mlaHalf = args(true, List.of(StateKind.MAMBA), List.of(64), List.of(4));
		assertThatThrownBy(() -> plan(mlaHalf, ParallelLayout.tp(2, 1), mlaWhole, ParallelLayout.tp(1, 0)))
				.hasMessageContaining("only one prefill rank of each group transfers");
	}

	@Test
	void swaListsOfDifferentLengthsMoveTheirCommonPrefixWithAWarningWhileMambaMustMatch() {
		KVArgs a = args(false, List.of(StateKind.MAMBA, StateKind.SWA), List.of(32, 64), List.of());
		StatePlan plan = plan(a, ParallelLayout.SINGLE, a, ParallelLayout.SINGLE);
		int[][] src = { { 1 }, { 4, 5, 6 } };
		int[][] dst = { { 2 }, { 9, 10 } };
		assertThat(plan.checkCounts(src, dst)).isNull();
		assertThat(plan.checkCounts(new int[][] { { 1 }, {} }, new int[][] { {}, {} }))
				.isEqualTo("MAMBA state slot count mismatch: prefill 1, decode 0");
		List<DataBlock> sent = new ArrayList<>();
		List<String> warnings = new ArrayList<>();
		long bytes = plan.send(outlet(sent), 7, src, dst, warnings::add);
		assertThat(bytes).isEqualTo(32 + 2 * 64);
		assertThat(sent).extracting(b -> b.header().region() + "@" + b.header().dstOffset())
				.containsExactly("0@64", "1@576", "1@640");
		assertThat(warnings).containsExactly("SWA state index length mismatch for room 7: prefill 3, decode 2; "
				+ "truncating to the common prefix of 2");
		assertThat(plan.checkDestinations(new int[][] { { 1 }, { 16 } }))
				.isEqualTo("destination state slot 16 outside decode's 0..15 of state[1]");
		assertThat(plan.checkDestinations(new int[][] { { 1 } })).isEqualTo("1 state index lists (expected 2)");
	}

	@Test
	void theSwaWindowStartsAtItsFirstTokensPage() {
		assertThat(StateKind.swaWindowPages(100, 10, 16)).containsExactly(5, 2);
		assertThat(StateKind.swaWindowPages(100, 200, 16)).containsExactly(0, 7);
		assertThat(StateKind.swaWindowPages(96, 32, 16)).containsExactly(4, 2);
		assertThatThrownBy(() -> StateKind.swaWindowPages(10, 0, 16)).hasMessageContaining("window=0");
	}

	private static BlockOutlet outlet(List<DataBlock> sent) {
		return new BlockOutlet() {
			@Override
			public void send(DataBlock block) {
				sent.add(block);
			}

			@Override
			public SendGate gate() {
				return SendGate.OPEN;
			}
		};
	}
}
