package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

import io.kvferry.KVArgs;
import io.kvferry.LandedPages;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import org.junit.jupiter.api.Test;

/**
 * Decode's ledger says a page landed in a KV buffer only when every byte of it landed as often as the plan writes it,
 * counted from writes whose payload landed whole; {@link LandedPages} turns that into what an engine recomputes.
 */
class LandedItemTest {

	private static final int ITEM = 16;

	@Test
	void aPageLandsWithItsLastByteAndNotBefore() {
		GrantLedger ledger = ledger(new int[] { 3, 4, 5 }, 1, 1);
		// Pages 3 and 4 in one strided-free run; page 5 in two head slices of 8 bytes.
		land(ledger, new DataHeader(1, RegionKind.KV, 0, 3L * ITEM, 2 * ITEM, 0, 1));
		land(ledger, new DataHeader(1, RegionKind.KV, 0, 5L * ITEM, 8, 0, 1));
		assertThat(ledger.landedItem(0, 3)).isTrue();
		assertThat(ledger.landedItem(0, 4)).isTrue();
		assertThat(ledger.landedItem(0, 5)).as("half of page 5").isFalse();
		land(ledger, new DataHeader(1, RegionKind.KV, 0, 5L * ITEM + 8, 7, 0, 1));
		assertThat(ledger.landedItem(0, 5)).as("one byte of page 5 missing").isFalse();
		land(ledger, new DataHeader(1, RegionKind.KV, 0, 5L * ITEM + 15, 1, 0, 1));
		assertThat(ledger.landedItem(0, 5)).isTrue();
		assertThat(ledger.landedItem(1, 3)).as("nothing landed in buffer 1").isFalse();
		assertThat(ledger.landedItem(0, 6)).as("a page the room did not ask for").isFalse();
	}

	@Test
	void aWriteThatWasReservedButNeverLandedCountsNothing() {
		GrantLedger ledger = ledger(new int[] { 0, 1 }, 1, 1);
		DataHeader cut = new DataHeader(1, RegionKind.KV, 0, 0, ITEM, ITEM, 2);
		ledger.destination(cut);
		ledger.reserve(cut);
		assertThat(ledger.landedItem(0, 0)).isFalse();
		assertThat(ledger.landedItem(0, 1)).isFalse();
	}

	@Test
	void replicatedBytesCountOnlyOnceEveryRankWroteThem() {
		GrantLedger ledger = ledger(new int[] { 2 }, 2, 0);
		DataHeader page = new DataHeader(1, RegionKind.KV, 0, 2L * ITEM, ITEM, 0, 1);
		land(ledger, page);
		assertThat(ledger.landedItem(0, 2)).as("one of the two ranks that write it").isFalse();
		land(ledger, page);
		assertThat(ledger.landedItem(0, 2)).isTrue();
		assertThatThrownBy(() -> ledger.reserve(page)).isInstanceOf(WriteRefused.class);
		assertThat(ledger.landedItem(1, 2)).as("a buffer the room fills nothing in received no byte").isFalse();
	}

	@Test
	void landedPagesNameRequestedPagesInOrderPerLayerAndForAllLayers() {
		BitSet layer0 = new BitSet();
		layer0.set(0, 3);
		BitSet layer1 = new BitSet();
		layer1.set(1);
		LandedPages landed = LandedPages.of(new int[] { 9, 4, 7 }, new BitSet[] { layer0, layer1 });
		assertThat(landed.isKnown()).isTrue();
		assertThat(landed.landed()).containsExactly(4);
		assertThat(landed.missing()).containsExactly(9, 7);
		assertThat(landed.landed(0)).containsExactly(9, 4, 7);
		assertThat(landed.missing(1)).containsExactly(9, 7);
		assertThat(landed.toString()).contains("1 of 3 landed").contains("[9, 7]");
		assertThatThrownBy(() -> landed.landed(2)).hasMessageContaining("layer : 2");
		assertThat(LandedPages.NONE.isKnown()).isFalse();
		assertThat(LandedPages.NONE.missing()).isEmpty();
	}

	private static void land(GrantLedger ledger, DataHeader h) {
		ledger.destination(h);
		ledger.reserve(h);
		ledger.landed(h.kind(), h.region(), h.payloadLength());
		ledger.landedWrite(h);
	}

	/** Two KV buffers of 16-byte pages; buffer {@code r} is written {@code times[r]} times. */
	private static GrantLedger ledger(int[] pages, int... times) {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int r = 0; r < times.length; r++) {
			kv.add(MemoryRegion.of(1L << 20, 16L * ITEM, ITEM));
		}
		KVArgs args = KVArgs.builder().pageSize(1).kvRegions(kv).build();
		return GrantLedger.of(args, pages, -1, new int[0][], times, 0, new int[0]);
	}
}
