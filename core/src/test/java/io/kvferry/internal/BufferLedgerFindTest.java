package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.Random;

import io.kvferry.spi.RegionKind;
import org.junit.jupiter.api.Test;

/**
 * A granted item's position is the same whichever look-up came before: the hint left by the last one only saves a
 * search, it never answers for another item.
 */
class BufferLedgerFindTest {

	@Test
	void everyItemIsFoundOrRefusedWhateverTheLookUpBeforeIt() {
		Random random = new Random(7);
		for (int round = 0; round < 200; round++) {
			int[] items = random.ints(1 + random.nextInt(64), 0, 200).sorted().distinct().toArray();
			BufferLedger ledger = new BufferLedger(RegionKind.KV, 0, 16, items, 1, 4);
			for (int i = 0; i < 500; i++) {
				// Mostly ascending runs, as pieces come, with jumps back, ahead and to items not granted.
				long item = random.nextInt(4) == 0 ? random.nextInt(220) - 10 : items[i % items.length];
				int expected = item < 0 ? -1 : Arrays.binarySearch(items, (int) item);
				int found = ledger.find(item);
				if (expected >= 0) {
					assertThat(found).as("item %d of %s", item, Arrays.toString(items)).isEqualTo(expected);
				}
				else {
					assertThat(found).as("item %d of %s", item, Arrays.toString(items)).isNegative();
				}
			}
		}
	}

	@Test
	void anItemPastTheIntRangeIsNeverGranted() {
		BufferLedger ledger = new BufferLedger(RegionKind.KV, 0, 16, new int[] { 0, 1, 2 }, 1, 4);
		assertThat(ledger.find(1)).isEqualTo(1);
		// Its low 32 bits are item 2: the hint must not answer for it.
		assertThat(ledger.find((1L << 32) + 2)).isNegative();
		assertThat(ledger.find(Long.MAX_VALUE)).isNegative();
	}

	@Test
	void aLedgerOfNoItemsFindsNothing() {
		assertThat(new BufferLedger(RegionKind.KV, 0, 16, new int[0], 0, 4).find(0)).isNegative();
	}
}
