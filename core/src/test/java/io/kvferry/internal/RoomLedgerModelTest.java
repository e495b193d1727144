package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import org.junit.jupiter.api.Test;

/**
 * The grant and the ledger together against a plain model of a room's bytes: random sequences of writes (every granted
 * byte written as often as planned, then pieces dropped, duplicated, shifted, split, merged into strided headers,
 * aimed outside the grant, and shuffled as stripes reorder them). The model: the room succeeds iff no write touches a
 * byte outside the granted items, no byte is written more often than planned, and at the end every granted byte was
 * written exactly as often as planned. Both must agree on every sequence, and on the write that ends a failed one.
 */
class RoomLedgerModelTest {

	// System property kvferry.ledgerSequences raises the count (the 100,000 and beyond).
	private static final int SEQUENCES = Integer.getInteger("kvferry.ledgerSequences", 100_000);
	private static final int KV_ITEM = 32;
	private static final int AUX_ITEM = 16;
	private static final int STATE_ITEM = 24;
	private static final int ITEMS = 12;
	private static final RegionKind[] KINDS = RegionKind.values();

	private final KVArgs args = KVArgs.builder().pageSize(1)
			.kvRegions(List.of(region(1, KV_ITEM), region(2, KV_ITEM)))
			.auxRegions(List.of(region(3, AUX_ITEM)))
			.stateRegions(List.of(region(4, STATE_ITEM)))
			.build();

	private static MemoryRegion region(int n, int itemLen) {
		return MemoryRegion.of((long) n << 24, (long) ITEMS * itemLen, itemLen);
	}

	@Test
	void theLedgerAgreesWithTheModelOnEverySequence() {
		Random random = new Random(20261203);
		int successes = 0;
		int refusals = 0;
		int incomplete = 0;
		for (int n = 0; n < SEQUENCES; n++) {
			Room room = Room.random(random, args);
			List<DataHeader> writes = room.writes(random);
			Model model = new Model(room);
			int modelEnd = model.run(writes);
			int ledgerEnd = runLedger(room, writes);
			assertThat(ledgerEnd).as("sequence %d: %s over %s", n, writes, room).isEqualTo(modelEnd);
			if (modelEnd == -1) {
				successes++;
			}
			else if (modelEnd == writes.size()) {
				incomplete++;
			}
			else {
				refusals++;
			}
		}
		// The generator reaches every outcome often: a model that always agreed by failing would show here.
		assertThat(successes).isGreaterThan(SEQUENCES / 20);
		assertThat(refusals).isGreaterThan(SEQUENCES / 20);
		assertThat(incomplete).isGreaterThan(SEQUENCES / 20);
	}

	/** @return -1 on Success, the index of the refused write, or writes.size() when incomplete at the end */
	private int runLedger(Room room, List<DataHeader> writes) {
		GrantLedger ledger = GrantLedger.of(args, room.pages, room.auxRow, new int[][] { room.slots }, room.kvTimes,
				room.auxTimes, new int[] { room.stateTimes });
		for (int i = 0; i < writes.size(); i++) {
			DataHeader h = writes.get(i);
			try {
				ledger.destination(h);
				ledger.reserve(h);
			}
			catch (WriteRefused refused) {
				return i;
			}
			ledger.landed(h.kind(), h.region(), h.payloadLength());
		}
		return ledger.incomplete() == null ? -1 : writes.size();
	}

	/** What a room granted and how often each byte is to be written. */
	private record Room(int[] pages, int auxRow, int[] slots, int[] kvTimes, int auxTimes, int stateTimes) {

		static Room random(Random random, KVArgs args) {
			int[] pages = distinct(random, random.nextInt(5));
			int auxRow = random.nextInt(3) == 0 ? -1 : random.nextInt(ITEMS);
			int[] slots = distinct(random, random.nextInt(3));
			int[] kvTimes = { 1, random.nextInt(4) == 0 ? 2 : 1 };
			return new Room(pages, auxRow, slots, kvTimes, auxRow < 0 ? 0 : 1 + random.nextInt(2),
					slots.length == 0 ? 0 : 1 + random.nextInt(2));
		}

		private static int[] distinct(Random random, int n) {
			List<Integer> all = new ArrayList<>();
			for (int i = 0; i < ITEMS; i++) {
				all.add(i);
			}
			Collections.shuffle(all, random);
			return all.subList(0, n).stream().mapToInt(Integer::intValue).toArray();
		}

		int times(RegionKind kind, int region) {
			return switch (kind) {
				case KV -> kvTimes[region];
				case AUX -> auxTimes;
				default -> stateTimes;
			};
		}

		int[] items(RegionKind kind) {
			return switch (kind) {
				case KV -> pages;
				case AUX -> auxRow < 0 ? new int[0] : new int[] { auxRow };
				default -> slots;
			};
		}

		static int itemLen(RegionKind kind) {
			return switch (kind) {
				case KV -> KV_ITEM;
				case AUX -> AUX_ITEM;
				default -> STATE_ITEM;
			};
		}

		static int regions(RegionKind kind) {
			return kind == RegionKind.KV ? 2 : 1;
		}

		/** Every granted byte as often as planned, in pieces, then mangled and shuffled. */
		List<DataHeader> writes(Random random) {
			List<DataHeader> writes = new ArrayList<>();
			for (RegionKind kind : KINDS) {
				int len = itemLen(kind);
				for (int r = 0; r < regions(kind); r++) {
					for (int item : items(kind)) {
						for (int t = 0; t < times(kind, r); t++) {
							int cut = random.nextInt(3) == 0 ? 1 + random.nextInt(len - 1) : len;
							writes.add(new DataHeader(7, kind, r, (long) item * len, cut, 0, 1));
							if (cut < len) {
								writes.add(new DataHeader(7, kind, r, (long) item * len + cut, len - cut, 0, 1));
							}
						}
					}
				}
			}
			int mangles = random.nextInt(3);
			for (int m = 0; m < mangles && !writes.isEmpty(); m++) {
				int at = random.nextInt(writes.size());
				DataHeader h = writes.get(at);
				int len = itemLen(h.kind());
				switch (random.nextInt(6)) {
					case 0 -> writes.remove(at);
					case 1 -> writes.add(h);
					case 2 -> writes.set(at, new DataHeader(7, h.kind(), h.region(),
							Math.max(0, h.dstOffset() + random.nextInt(2 * len) - len), h.chunkLen(), 0, 1));
					case 3 -> writes.add(new DataHeader(7, h.kind(), h.region(), (long) random.nextInt(ITEMS) * len,
							len, 0, 1));
					case 4 -> {
						// A strided header: the same bytes of two items, as a head slice moves them.
						int chunk = 1 + random.nextInt(len / 2);
						writes.add(new DataHeader(7, h.kind(), h.region(), (long) random.nextInt(ITEMS - 1) * len
								+ random.nextInt(len - chunk + 1), chunk, len, 2));
					}
					default -> {
						// A piece split in two frames: same bytes, still correct.
						if (h.count() == 1 && h.chunkLen() > 1) {
							int cut = 1 + random.nextInt(h.chunkLen() - 1);
							writes.set(at, new DataHeader(7, h.kind(), h.region(), h.dstOffset(), cut, 0, 1));
							writes.add(new DataHeader(7, h.kind(), h.region(), h.dstOffset() + cut,
									h.chunkLen() - cut, 0, 1));
						}
					}
				}
			}
			Collections.shuffle(writes, random);
			return writes;
		}
	}

	/** The room's bytes, one counter each. */
	private static final class Model {
		private final Room room;
		private final int[][][] counts = new int[KINDS.length][][];
		private final boolean[][][] granted = new boolean[KINDS.length][][];

		Model(Room room) {
			this.room = room;
			for (RegionKind kind : KINDS) {
				int len = Room.itemLen(kind);
				counts[kind.ordinal()] = new int[Room.regions(kind)][ITEMS * len];
				granted[kind.ordinal()] = new boolean[Room.regions(kind)][ITEMS * len];
				for (int r = 0; r < Room.regions(kind); r++) {
					for (int item : room.items(kind)) {
						for (int b = 0; b < len; b++) {
							granted[kind.ordinal()][r][item * len + b] = true;
						}
					}
				}
			}
		}

		int run(List<DataHeader> writes) {
			for (int i = 0; i < writes.size(); i++) {
				if (!write(writes.get(i))) {
					return i;
				}
			}
			for (RegionKind kind : KINDS) {
				for (int r = 0; r < Room.regions(kind); r++) {
					int[] c = counts[kind.ordinal()][r];
					for (int b = 0; b < c.length; b++) {
						if (granted[kind.ordinal()][r][b] && c[b] != room.times(kind, r)) {
							return writes.size();
						}
					}
				}
			}
			return -1;
		}

		private boolean write(DataHeader h) {
			int k = h.kind().ordinal();
			int[] c = counts[k][h.region()];
			boolean[] g = granted[k][h.region()];
			long stride = h.count() == 1 ? h.chunkLen() : h.dstStride();
			for (int i = 0; i < h.count(); i++) {
				for (long b = h.dstOffset() + i * stride; b < h.dstOffset() + i * stride + h.chunkLen(); b++) {
					if (b >= c.length || !g[(int) b] || c[(int) b] >= room.times(h.kind(), h.region())) {
						return false;
					}
					c[(int) b]++;
				}
			}
			return true;
		}
	}
}
