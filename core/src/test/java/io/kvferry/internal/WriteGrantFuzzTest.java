package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import org.junit.jupiter.api.Test;

/**
 * Every header field a peer controls that becomes an address, fuzzed: random and adversarial DATA headers (strides and
 * counts whose products overflow, offsets at the ends of the address space, regions and kinds that do not exist,
 * negative values a codec would never pass) are judged by {@link GrantLedger} and by a brute-force model that walks
 * every byte the header would write and asks "does it lie in the region, in an item the room was granted?". The two
 * must never disagree.
 */
class WriteGrantFuzzTest {

	private static final long BASE = 1L << 40;
	private static final long[] HUGE = { 1L << 31, 1L << 32, 1L << 44, 1L << 62, Long.MAX_VALUE, Long.MAX_VALUE - 1,
			(1L << 63) / 3 + 1, -1, Long.MIN_VALUE };
	private static final int[] HUGE_COUNTS = { (1 << 20) + 1, 1 << 16, Integer.MAX_VALUE, 0, -1, Integer.MIN_VALUE };

	/** A decode rank's regions and one room's grant, with the grant as plain sets for the model. */
	private record World(KVArgs args, GrantLedger grant, boolean[][][] granted) {

		List<MemoryRegion> regions(RegionKind kind) {
			return kind == RegionKind.KV ? args.kvRegions()
					: kind == RegionKind.AUX ? args.auxRegions() : args.stateRegions();
		}
	}

	@Test
	void smallRegionsAgreeWithByteByByteModelOnAMillionHeaders() {
		SplittableRandom random = new SplittableRandom(20261202);
		long accepted = 0;
		long total = 0;
		for (int w = 0; w < 2_000; w++) {
			World world = smallWorld(random);
			for (int i = 0; i < 500; i++) {
				DataHeader h = header(random, world);
				if (compare(world, h)) {
					accepted++;
				}
				total++;
			}
		}
		assertThat(total).isEqualTo(1_000_000);
		// Not vacuous: both answers occur often.
		assertThat(accepted).isBetween(total / 20, total - total / 20);
	}

	@Test
	void overflowingGeometryOnHugeRegionsAgreesWithTheModel() {
		SplittableRandom random = new SplittableRandom(44);
		long accepted = 0;
		for (int w = 0; w < 200; w++) {
			World world = hugeWorld(random);
			for (int i = 0; i < 1_000; i++) {
				if (compare(world, adversarial(random, world))) {
					accepted++;
				}
			}
		}
		assertThat(accepted).isPositive();
	}

	/** @return whether the header was accepted (after checking both judges agree) */
	private static boolean compare(World world, DataHeader h) {
		boolean model = modelAllows(world, h);
		Long address;
		try {
			address = world.grant().destination(h);
		}
		catch (WriteRefused refused) {
			address = null;
		}
		assertThat(address != null).as("grant vs model for %s", h).isEqualTo(model);
		if (address != null) {
			assertThat(address).isEqualTo(world.regions(h.kind()).get(h.region()).address() + h.dstOffset());
		}
		return model;
	}

	/**
	 * Walks every chunk with exact (BigInteger) positions, and every item each chunk's bytes touch: a chunk's bytes
	 * {@code [s, s + chunkLen)} lie in items {@code s / itemLen} to {@code (s + chunkLen - 1) / itemLen}.
	 */
	private static boolean modelAllows(World world, DataHeader h) {
		List<MemoryRegion> regions = world.regions(h.kind());
		if (h.region() < 0 || h.region() >= regions.size() || h.chunkLen() < 1 || h.count() < 1) {
			return false;
		}
		if (h.count() > 1 && h.dstStride() < h.chunkLen()) {
			return false;
		}
		MemoryRegion region = regions.get(h.region());
		boolean[] items = world.granted()[h.kind().ordinal()][h.region()];
		BigInteger length = BigInteger.valueOf(region.length());
		for (long i = 0; i < h.count(); i++) {
			BigInteger start = BigInteger.valueOf(h.dstOffset())
					.add(BigInteger.valueOf(i).multiply(BigInteger.valueOf(h.dstStride())));
			BigInteger end = start.add(BigInteger.valueOf(h.chunkLen()));
			if (start.signum() < 0 || end.compareTo(length) > 0) {
				return false;
			}
			long first = start.longValue() / region.itemLen();
			long last = (end.longValue() - 1) / region.itemLen();
			for (long item = first; item <= last; item++) {
				if (item >= items.length || !items[(int) item]) {
					return false;
				}
			}
		}
		return true;
	}

	private static World smallWorld(SplittableRandom r) {
		List<MemoryRegion> kv = regions(r, 1 + r.nextInt(3), 32, 24, BASE);
		List<MemoryRegion> aux = regions(r, r.nextInt(3), 16, 8, BASE << 1);
		List<MemoryRegion> state = regions(r, r.nextInt(3), 16, 8, BASE << 2);
		return world(r, kv, aux, state);
	}

	private static World hugeWorld(SplittableRandom r) {
		List<MemoryRegion> kv = new ArrayList<>();
		for (int i = 0; i < 2; i++) {
			int itemLen = 1 << (6 + r.nextInt(10));
			kv.add(MemoryRegion.of(BASE + i * (1L << 42), (1L << 40) / itemLen * itemLen, itemLen));
		}
		return world(r, kv, List.of(MemoryRegion.of(BASE << 3, 1L << 30, 64)), List.of());
	}

	private static List<MemoryRegion> regions(SplittableRandom r, int n, int maxItemLen, int maxItems, long base) {
		List<MemoryRegion> list = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			int itemLen = 1 + r.nextInt(maxItemLen);
			list.add(MemoryRegion.of(base + i * (1L << 20), (long) itemLen * (1 + r.nextInt(maxItems)), itemLen));
		}
		return list;
	}

	private static World world(SplittableRandom r, List<MemoryRegion> kv, List<MemoryRegion> aux,
			List<MemoryRegion> state) {
		KVArgs args = KVArgs.builder().mla(true).kvRegions(kv).auxRegions(aux).stateRegions(state).build();
		int kvItems = (int) Math.min(64, kv.stream().mapToLong(MemoryRegion::itemCount).min().orElse(1));
		int[] pages = pick(r, kvItems, 1 + r.nextInt(Math.max(1, kvItems)));
		int auxItems = (int) aux.stream().mapToLong(MemoryRegion::itemCount).min().orElse(1);
		int auxRow = r.nextInt(4) == 0 ? -1 : r.nextInt(Math.min(auxItems, 64));
		int stateItems = (int) Math.min(64, state.stream().mapToLong(MemoryRegion::itemCount).min().orElse(1));
		int[] slots = pick(r, stateItems, r.nextInt(3));
		boolean[][][] granted = new boolean[3][][];
		granted[0] = mark(kv, pages);
		granted[1] = mark(aux, auxRow < 0 ? new int[0] : new int[] { auxRow });
		granted[2] = mark(state, slots);
		return new World(args, GrantLedger.of(args, pages, auxRow, slots), granted);
	}

	/** Distinct-ish picks: duplicates are kept on purpose (an engine may repeat a page). */
	private static int[] pick(SplittableRandom r, int bound, int n) {
		int[] out = new int[n];
		int run = r.nextInt(bound);
		for (int i = 0; i < n; i++) {
			// Half runs of consecutive items (as page runs are), half anywhere.
			run = r.nextBoolean() ? Math.min(bound - 1, run + 1) : r.nextInt(bound);
			out[i] = run;
		}
		return out;
	}

	private static boolean[][] mark(List<MemoryRegion> regions, int[] items) {
		boolean[][] m = new boolean[regions.size()][];
		for (int i = 0; i < regions.size(); i++) {
			m[i] = new boolean[64];
			for (int item : items) {
				m[i][item] = true;
			}
		}
		return m;
	}

	private static DataHeader header(SplittableRandom r, World w) {
		RegionKind kind = RegionKind.values()[r.nextInt(8) < 6 ? 0 : 1 + r.nextInt(2)];
		List<MemoryRegion> regions = w.regions(kind);
		int region = r.nextInt(16) == 0 ? (r.nextBoolean() ? -1 : regions.size()) : r.nextInt(Math.max(1, regions.size()));
		MemoryRegion reg = regions.isEmpty() ? null : regions.get(Math.min(Math.max(region, 0), regions.size() - 1));
		int itemLen = reg == null ? 8 : reg.itemLen();
		long length = reg == null ? 64 : reg.length();
		int chunkLen;
		switch (r.nextInt(10)) {
			case 0:
				chunkLen = r.nextInt(3) - 1;
				break;
			case 1:
				chunkLen = r.nextBoolean() ? Integer.MAX_VALUE : itemLen;
				break;
			default:
				chunkLen = 1 + r.nextInt(2 * itemLen);
		}
		int count = r.nextInt(12) == 0 ? HUGE_COUNTS[r.nextInt(HUGE_COUNTS.length)] : 1 + r.nextInt(r.nextBoolean() ? 2 : 8);
		long stride;
		switch (r.nextInt(10)) {
			case 0:
				stride = HUGE[r.nextInt(HUGE.length)];
				break;
			case 1:
				stride = r.nextInt(Math.max(1, chunkLen + 1));
				break;
			case 2:
				stride = (long) itemLen * (1 + r.nextInt(3));
				break;
			default:
				stride = (long) chunkLen + r.nextInt(2 * itemLen);
		}
		long offset;
		switch (r.nextInt(10)) {
			case 0:
				offset = r.nextBoolean() ? HUGE[r.nextInt(HUGE.length)] : length - r.nextInt(4);
				break;
			case 1:
				offset = r.nextLong(Math.max(1, length));
				break;
			default:
				// Near the start of an item, so that granted items are hit often.
				offset = (long) itemLen * r.nextInt((int) Math.max(1, length / itemLen)) + r.nextInt(3) - 1;
		}
		return new DataHeader(r.nextLong(), kind, region, offset, chunkLen, stride, count);
	}

	private static DataHeader adversarial(SplittableRandom r, World w) {
		MemoryRegion reg = w.args().kvRegions().get(r.nextInt(2));
		int region = w.args().kvRegions().indexOf(reg);
		long item = reg.itemLen();
		boolean[] granted = w.granted()[0][region];
		int page = r.nextInt(granted.length);
		long offset = r.nextInt(4) == 0 ? HUGE[r.nextInt(HUGE.length)] : page * item + r.nextInt(3) - 1;
		int chunkLen = r.nextInt(4) == 0 ? Integer.MAX_VALUE - r.nextInt(2) : 1 + r.nextInt((int) item * 2);
		int count = r.nextBoolean() ? HUGE_COUNTS[r.nextInt(HUGE_COUNTS.length)] : 1 + r.nextInt(16);
		long stride = r.nextBoolean() ? HUGE[r.nextInt(HUGE.length)] : item * (1 + r.nextInt(4));
		return new DataHeader(1, RegionKind.KV, region, offset, chunkLen, stride, count);
	}
}
