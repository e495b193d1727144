package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import org.junit.jupiter.api.Test;

/** The decode write check, case by case; {@link WriteGrantFuzzTest} compares it with a brute-force model. */
class WriteGrantTest {

	// Regions that only describe memory: the check computes addresses and never touches them.
	private static final long BASE = 1L << 40;
	private static final int ITEM = 1024;
	private static final KVArgs ARGS = KVArgs.builder()
			.pageSize(16)
			.kvRegions(List.of(MemoryRegion.of(BASE, 64L * ITEM, ITEM), MemoryRegion.of(BASE << 1, 64L * ITEM, ITEM)))
			.auxRegions(List.of(MemoryRegion.of(BASE << 2, 8L * 64, 64)))
			.stateRegions(List.of(MemoryRegion.of(BASE << 3, 8L * 256, 256)))
			.build();
	private static final GrantLedger GRANT = GrantLedger.of(ARGS, new int[] { 9, 3, 4, 5, 4 }, 2, new int[] { 6 });

	private static DataHeader kv(int region, long offset, int chunkLen, long stride, int count) {
		return new DataHeader(7, RegionKind.KV, region, offset, chunkLen, stride, count);
	}

	@Test
	void aRunOfGrantedPagesIsAllowedAtItsAddress() {
		assertThat(GRANT.destination(kv(0, 3L * ITEM, 3 * ITEM, 0, 1))).isEqualTo(BASE + 3L * ITEM);
		assertThat(GRANT.destination(kv(1, 9L * ITEM + 10, 100, 0, 1))).isEqualTo((BASE << 1) + 9L * ITEM + 10);
	}

	@Test
	void eachStateRegionTakesOnlyTheSlotsItsComponentWasGranted() {
		// A hybrid rank: a Mamba slot region (granted slot 1) and an SWA page region (granted pages 4 and 5).
		KVArgs hybrid = ARGS.mutate()
				.stateRegions(List.of(MemoryRegion.of(BASE << 3, 8L * 256, 256), MemoryRegion.of(BASE << 4, 8L * 64, 64)))
				.stateKinds(List.of(io.kvferry.StateKind.MAMBA, io.kvferry.StateKind.SWA))
				.build();
		GrantLedger grant = GrantLedger.of(hybrid, new int[] { 3 }, 2, new int[][] { { 1 }, { 4, 5 } });
		assertThat(grant.destination(new DataHeader(7, RegionKind.STATE, 0, 256, 256, 0, 1))).isEqualTo((BASE << 3) + 256);
		assertThat(grant.destination(new DataHeader(7, RegionKind.STATE, 1, 4 * 64, 128, 0, 1)))
				.isEqualTo((BASE << 4) + 4 * 64);
		// Slot 4 is an SWA page of this room, not its Mamba slot; slot 1 is its Mamba slot, not an SWA page.
		assertThatThrownBy(() -> grant.destination(new DataHeader(7, RegionKind.STATE, 0, 4 * 256, 256, 0, 1)))
				.isInstanceOf(WriteRefused.class).hasMessage("STATE item 4 of region 0 was not asked for");
		assertThatThrownBy(() -> grant.destination(new DataHeader(7, RegionKind.STATE, 1, 64, 64, 0, 1)))
				.hasMessage("STATE item 1 of region 1 was not asked for");
	}

	@Test
	void oneByteIntoAPageNotGrantedIsRefused() {
		assertThatThrownBy(() -> GRANT.destination(kv(0, 3L * ITEM, 3 * ITEM + 1, 0, 1)))
				.isInstanceOf(WriteRefused.class).hasMessage("KV item 6 of region 0 was not asked for");
		assertThatThrownBy(() -> GRANT.destination(kv(0, 3L * ITEM - 1, 2, 0, 1)))
				.hasMessage("KV item 2 of region 0 was not asked for");
	}

	@Test
	void stridedChunksAreCheckedWhereTheyLandNotOnlyAtTheirEnds() {
		// Head slices of pages 3..5: 16 tokens per page, 64-byte token stride, 16 bytes per token.
		assertThat(GRANT.destination(kv(0, 3L * ITEM + 32, 16, 64, 48))).isEqualTo(BASE + 3L * ITEM + 32);
		// Chunks 2 pages apart from page 3: 3, 5, 7 — page 7 was not granted although 9 (the last) is.
		assertThatThrownBy(() -> GRANT.destination(kv(0, 3L * ITEM, 8, 2L * ITEM, 4)))
				.hasMessage("KV item 7 of region 0 was not asked for");
		// Sparse chunks over granted pages only: 3, 5, 9 are not evenly spaced, 3 and 5 are.
		assertThat(GRANT.destination(kv(0, 3L * ITEM, 8, 2L * ITEM, 2))).isEqualTo(BASE + 3L * ITEM);
	}

	@Test
	void strideArithmeticThatOverflowsIsRefusedNotWrapped() {
		// (count - 1) × stride wraps to a small span in 64-bit two's complement if computed naively.
		DataHeader wrap = kv(0, 3L * ITEM, 1, 1L << 44, (1 << 20) + 1);
		assertThatThrownBy(() -> GRANT.destination(wrap)).isInstanceOf(WriteRefused.class)
				.hasMessageContaining("outside KV region 0");
		assertThatThrownBy(() -> GRANT.destination(kv(0, Long.MAX_VALUE - 10, 100, 0, 1)))
				.hasMessageContaining("beyond 2^63");
		assertThatThrownBy(() -> GRANT.destination(kv(0, 3L * ITEM, 8, Long.MAX_VALUE, 2)))
				.hasMessageContaining("beyond 2^63");
		assertThatThrownBy(() -> GRANT.destination(kv(0, 3L * ITEM, Integer.MAX_VALUE, Integer.MAX_VALUE,
				Integer.MAX_VALUE))).hasMessageContaining("outside KV region 0");
	}

	@Test
	void malformedGeometryIsRefusedByName() {
		assertThatThrownBy(() -> GRANT.destination(kv(0, 3L * ITEM, 0, 0, 1))).hasMessageContaining("chunkLen");
		assertThatThrownBy(() -> GRANT.destination(kv(0, 3L * ITEM, 8, 0, 0))).hasMessageContaining("count");
		assertThatThrownBy(() -> GRANT.destination(kv(0, 3L * ITEM, 8, 4, 2))).hasMessageContaining("overlap");
		assertThatThrownBy(() -> GRANT.destination(kv(2, 0, 8, 0, 1)))
				.hasMessage("no KV region 2 (this rank registered 2)");
		assertThatThrownBy(() -> GRANT.destination(kv(-1, 0, 8, 0, 1))).hasMessageContaining("no KV region -1");
		assertThatThrownBy(() -> GRANT.destination(kv(0, -1, 8, 0, 1))).hasMessageContaining("outside");
	}

	@Test
	void auxAndStateWritesReachOnlyTheRoomsRowAndSlots() {
		assertThat(GRANT.destination(new DataHeader(7, RegionKind.AUX, 0, 2 * 64, 64, 0, 1)))
				.isEqualTo((BASE << 2) + 128);
		assertThatThrownBy(() -> GRANT.destination(new DataHeader(7, RegionKind.AUX, 0, 3 * 64, 64, 0, 1)))
				.hasMessage("AUX item 3 of region 0 was not asked for");
		assertThat(GRANT.destination(new DataHeader(7, RegionKind.STATE, 0, 6 * 256, 256, 0, 1)))
				.isEqualTo((BASE << 3) + 6 * 256);
		assertThatThrownBy(() -> GRANT.destination(new DataHeader(7, RegionKind.STATE, 0, 6 * 256, 257, 0, 1)))
				.hasMessage("STATE item 7 of region 0 was not asked for");
		GrantLedger noAux = GrantLedger.of(ARGS, new int[] { 1 }, -1, new int[0]);
		assertThatThrownBy(() -> noAux.destination(new DataHeader(7, RegionKind.AUX, 0, 0, 64, 0, 1)))
				.hasMessage("AUX item 0 of region 0 was not asked for");
		assertThatThrownBy(() -> noAux.destination(new DataHeader(7, RegionKind.STATE, 0, 0, 1, 0, 1)))
				.hasMessage("STATE item 0 of region 0 was not asked for");
	}

	@Test
	void aGrantWithNoPagesRefusesEveryKvByte() {
		GrantLedger none = GrantLedger.of(ARGS, new int[0], -1, new int[0]);
		assertThatThrownBy(() -> none.destination(kv(0, 0, 1, 0, 1))).hasMessage("KV item 0 of region 0 was not asked for");
	}
}
