package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

import io.kvferry.KVArgs;
import io.kvferry.KVLayout;
import io.kvferry.MemoryRegion;
import io.kvferry.ParallelLayout;
import io.kvferry.StateKind;
import io.kvferry.TopologyException;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.PeerLayout;
import org.junit.jupiter.api.Test;

/** The prefill side's plan for one decode rank: what the handshake rejects, what a request may ask, how runs move. */
class TransferPlanTest {

	// Regions that only describe memory: planning computes addresses and never touches them.
	private static final long BASE = 1L << 40;
	private static final int ITEM = 128 * 1024;

	private static KVArgs.Builder args(int layers, int pages) {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int i = 0; i < 2 * layers; i++) {
			kv.add(MemoryRegion.of(BASE + i * (1L << 36), (long) pages * ITEM, ITEM));
		}
		return KVArgs.builder().pageSize(64).kvHeads(8, 8).kvRegions(kv)
				.auxRegions(List.of(MemoryRegion.of(BASE << 2, 8 * 64L, 64)))
				.stateRegions(List.of(MemoryRegion.of(BASE << 3, 4 * 256L, 256)));
	}

	private static TransferPlan plan(UnaryOperator<KVArgs.Builder> decode, ParallelLayout decodeLayout) {
		return TransferPlan.of(args(2, 512).build(), ParallelLayout.SINGLE,
				PeerLayout.of(decode.apply(args(2, 512)).build(), decodeLayout));
	}

	@Test
	void theHandshakeRejectsEveryIncompatibleValueByName() {
		assertThatThrownBy(() -> plan(b -> b.pageSize(48).kvRegions(regions(4, 48 * 2048)), ParallelLayout.SINGLE))
				.isInstanceOf(TopologyException.class)
				.hasMessage("page sizes differ and are not both powers of two: prefill page_size=64, decode "
						+ "page_size=48 (expected: equal, or powers of two so that one page size divides the other)");
		assertThatThrownBy(() -> plan(b -> b.pageSize(32), ParallelLayout.SINGLE))
				.hasMessage("KV token length mismatch: prefill kv[0] " + ITEM + " bytes per page of 64 tokens, decode "
						+ "kv[0] " + ITEM + " bytes per page of 32 tokens (expected: the same bytes per token)");
		assertThatThrownBy(() -> plan(b -> b.pageSize(32).kvRegions(regions(4, ITEM / 2)).dtype("fp8_e4m3"),
				ParallelLayout.SINGLE)).hasMessage("KV cache dtype mismatch: prefill bf16, decode fp8_e4m3");
		assertThatThrownBy(() -> plan(b -> b.mla(true), ParallelLayout.SINGLE))
				.hasMessage("MLA mismatch: prefill mla=false, decode mla=true");
		assertThatThrownBy(() -> plan(b -> b.dtype("fp8_e4m3"), ParallelLayout.SINGLE))
				.hasMessage("KV cache dtype mismatch: prefill bf16, decode fp8_e4m3");
		assertThatThrownBy(() -> TransferPlan.of(args(2, 512).build(), ParallelLayout.tp(2, 0),
				PeerLayout.of(args(2, 512).build(), ParallelLayout.tp(3, 0))))
				.hasMessage("attention TP sizes do not divide each other: prefill 2, decode 3");
		assertThatThrownBy(() -> plan(UnaryOperator.identity(), new ParallelLayout(1, 0, 1, 0, 1, 0, 2, 0)))
				.hasMessage("decode PP size 2 must equal prefill PP size 1 or be 1");
		assertThatThrownBy(() -> plan(b -> b.kvRegions(regions(4, ITEM / 2)), ParallelLayout.SINGLE))
				.hasMessageContaining("KV item length mismatch: prefill kv[0] " + ITEM + " bytes, decode kv[0] "
						+ ITEM / 2 + " bytes");
		assertThatThrownBy(() -> plan(b -> b.auxRegions(List.of()), ParallelLayout.SINGLE))
				.hasMessage("aux buffer count mismatch: prefill 1, decode 0");
		assertThatThrownBy(() -> plan(b -> b.auxRegions(List.of(MemoryRegion.of(BASE << 2, 8 * 32L, 32))),
				ParallelLayout.SINGLE)).hasMessage("aux item length mismatch at aux[0]: prefill 64, decode 32");
		assertThatThrownBy(() -> plan(b -> b.stateRegions(List.of(MemoryRegion.of(BASE << 3, 4 * 128L, 128))),
				ParallelLayout.SINGLE)).hasMessage("state item length mismatch at state[0]: prefill 256, decode 128");
	}

	@Test
	void pageIndexedStateCannotBeRepaged() {
		UnaryOperator<KVArgs.Builder> swa = b -> b.stateKinds(List.of(StateKind.SWA));
		assertThatThrownBy(() -> TransferPlan.of(swa.apply(args(2, 512)).build(), ParallelLayout.SINGLE,
				PeerLayout.of(swa.apply(args(2, 512)).pageSize(32).kvRegions(regions(4, ITEM / 2)).build(),
						ParallelLayout.SINGLE)))
				.isInstanceOf(TopologyException.class)
				.hasMessage("SWA state with different page sizes: prefill page_size=64, decode page_size=32 "
						+ "(expected: equal page sizes; SWA state is indexed by page)");
		UnaryOperator<KVArgs.Builder> mamba = b -> b.stateKinds(List.of(StateKind.MAMBA)).stateTpDims(List.of(1));
		assertThat(TransferPlan.of(mamba.apply(args(2, 512)).build(), ParallelLayout.SINGLE,
				PeerLayout.of(mamba.apply(args(2, 512)).pageSize(32).kvRegions(regions(4, ITEM / 2)).build(),
						ParallelLayout.SINGLE)).hasState()).isTrue();
	}

	private static List<MemoryRegion> regions(int n, int itemLen) {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			kv.add(MemoryRegion.of(BASE + i * (1L << 36), 512L * itemLen, itemLen));
		}
		return kv;
	}

	@Test
	void aRequestMayAskOnlyForWhatDecodeRegistered() {
		TransferPlan plan = plan(UnaryOperator.identity(), ParallelLayout.SINGLE);
		assertThat(plan.check(new int[] { 0, 511 }, 7, new int[][] { { 3 } })).isNull();
		assertThat(plan.check(new int[] { 512 }, -1, new int[][] { {} })).isEqualTo("destination page 512 outside decode's 0..511");
		assertThat(plan.check(new int[] { -1 }, -1, new int[][] { {} })).isEqualTo("destination page -1 outside decode's 0..511");
		assertThat(plan.check(new int[0], 8, new int[][] { {} })).isEqualTo("destination aux row 8 outside decode's 0..7");
		assertThat(plan.check(new int[0], -1, new int[][] { { 4 } }))
				.isEqualTo("destination state slot 4 outside decode's 0..3 of state[0]");
	}

	@Test
	void aRequestMayNameEachDestinationOnce() {
		// Two writes to one page would each land whole: decode's ledger refuses the second, and prefill's own scatter
		// list, which never writes a byte twice, refuses to be built from them.
		TransferPlan plan = plan(UnaryOperator.identity(), ParallelLayout.SINGLE);
		assertThat(plan.check(new int[] { 3, 9, 3 }, -1, new int[][] { {} }))
				.isEqualTo("destination page 3 listed twice (expected: distinct pages)");
		assertThat(plan.check(new int[] { 3 }, -1, new int[][] { { 2, 1, 2 } }))
				.isEqualTo("destination state slot 2 listed twice in state[0] (expected: distinct slots)");
	}

	@Test
	void aRunLongerThanABlockMovesInBlocksThatTileItExactly() {
		TransferPlan plan = plan(UnaryOperator.identity(), ParallelLayout.SINGLE);
		List<DataBlock> blocks = new ArrayList<>();
		int pages = 300;
		int[] src = new int[pages];
		int[] dst = new int[pages];
		for (int i = 0; i < pages; i++) {
			src[i] = 10 + i;
			dst[i] = 200 + i;
		}
		long bytes = plan.sendKv(collecting(blocks), 1, src, dst);
		int perBlock = (int) (TransferPlan.MAX_BLOCK_BYTES / ITEM);
		assertThat(bytes).isEqualTo(4L * pages * ITEM);
		// Per layer buffer: 128 + 128 + 44 pages, each block where the previous one stopped, on both sides.
		assertThat(blocks).hasSize(4 * 3);
		KVArgs prefill = args(2, 512).build();
		for (int buffer = 0; buffer < 4; buffer++) {
			long done = 0;
			for (int b = 0; b < 3; b++) {
				DataHeader h = blocks.get(buffer * 3 + b).header();
				int n = Math.min(perBlock, pages - b * perBlock);
				assertThat(h.region()).isEqualTo(buffer);
				assertThat(h.dstOffset()).isEqualTo((200L + done) * ITEM);
				assertThat(h.payloadLength()).isEqualTo((long) n * ITEM);
				assertThat(blocks.get(buffer * 3 + b).srcAddress())
						.isEqualTo(prefill.kvRegions().get(buffer).itemAddress(10 + done));
				done += n;
			}
			assertThat(done).isEqualTo(pages);
		}
	}

	@Test
	void mixedLayoutsArePlannedHeadByHeadAndUntranslatablePagesAreRefusedByName() {
		// Prefill HND pages of 64 tokens, decode NHD pages of 32: re-paged and re-laid, one block per token.
		TransferPlan plan = TransferPlan.of(args(2, 512).kvLayout(KVLayout.HND).build(), ParallelLayout.SINGLE,
				PeerLayout.of(args(2, 512).pageSize(32).kvRegions(regions(4, ITEM / 2)).build(),
						ParallelLayout.SINGLE));
		List<DataBlock> blocks = new ArrayList<>();
		long bytes = plan.sendKv(collecting(blocks), 1, new int[] { 5 }, 0, new int[] { 7, 2 }, true, null);
		assertThat(bytes).isEqualTo(4L * ITEM);
		// Per buffer two runs of 32 tokens (decode's pages 7 and 2), one block per token: its 8 heads of 256 bytes, a
		// head page (64 × 256 bytes) apart in prefill's head-major page and adjacent in decode's token-major one, so
		// that the block is one run of decode's page.
		assertThat(blocks).hasSize(4 * 2 * 32);
		DataBlock token3 = blocks.get(3);
		assertThat(token3.srcAddress()).isEqualTo(args(2, 512).build().kvRegions().get(0).itemAddress(5) + 3 * 256);
		assertThat(token3.header().dstOffset()).isEqualTo(7L * ITEM / 2 + 3 * 2048);
		assertThat(token3.header().chunkLen()).isEqualTo(256);
		assertThat(token3.header().count()).isEqualTo(8);
		assertThat(token3.srcStride()).isEqualTo(64 * 256);
		assertThat(token3.header().dstStride()).isEqualTo(256);

		// Heads that a page does not hold whole cannot be re-laid.
		assertThatThrownBy(() -> TransferPlan.of(args(2, 512).kvLayout(KVLayout.HND).kvHeads(6, 6).build(),
				ParallelLayout.SINGLE, PeerLayout.of(args(2, 512).kvHeads(6, 6).build(), ParallelLayout.SINGLE)))
				.isInstanceOf(TopologyException.class)
				.hasMessage("KV layout HND on prefill kv[0]: a page of " + ITEM + " bytes does not hold 64 tokens of 6 "
						+ "whole heads (expected: item length a multiple of page size × heads, so that each head of "
						+ "each token can be re-laid)");
		assertThatThrownBy(() -> TransferPlan.of(args(2, 512).kvLayout(KVLayout.HND).build(), ParallelLayout.SINGLE,
				PeerLayout.of(args(2, 512).kvHeads(4, 4).build(), ParallelLayout.SINGLE)))
				.isInstanceOf(TopologyException.class)
				.hasMessage("KV layout HND to NHD: prefill kv[0] holds 8 heads of 256 bytes per token, decode kv[0] 4 "
						+ "heads of 512 bytes (expected: the same heads, so that each head of each token can be re-laid)");
	}

	/** @return an outlet that keeps every block it is sent */
	private static BlockOutlet collecting(List<DataBlock> blocks) {
		return new BlockOutlet() {
			@Override
			public void send(DataBlock block) {
				blocks.add(block);
			}

			@Override
			public io.kvferry.spi.SendGate gate() {
				return io.kvferry.spi.SendGate.OPEN;
			}
		};
	}
}
