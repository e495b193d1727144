package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import io.kvferry.KVArgs;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import org.junit.jupiter.api.Test;

/**
 * Scatter lists a peer controls, fuzzed against brute-force models: random lists of pieces, mostly valid, mutated into
 * overlapping, duplicated, reordered, out-of-range, empty, 64-bit-overflowing pieces and lengths that do not sum to
 * the payload, sent as a room's sequence of frames (so a piece may also repeat one an earlier frame wrote). Each
 * frame is judged as decode judges it, {@link ScatterHeader#validate} then every piece through the room's
 * {@link GrantLedger} ({@code destination}, then {@code reserve}), and by two models:
 * <ul>
 * <li>the list's shape, from exact (BigInteger) intervals: pieces sorted by region then offset, pairwise disjoint in
 * each region, each of at least one byte at an offset ≥ 0 ending before 2^63, summing to the payload;</li>
 * <li>the bytes: every byte of every piece inside its region and in an item the room was granted, and no byte written
 * twice by this frame and the room's earlier accepted ones (a byte map).</li>
 * </ul>
 * {@code validate} must agree with the first model alone, and the whole judgement with both together: so a broken
 * check in either layer shows, even where the other layer would have caught the same list. After a refusal the room
 * starts over (a refused frame fails the room on decode).
 */
class ScatterGrantFuzzTest {

	private static final long BASE = 1L << 40;
	private static final long[] HUGE = { 1L << 31, 1L << 32, 1L << 62, Long.MAX_VALUE, Long.MAX_VALUE - 1,
			Long.MAX_VALUE - 40, -1, Long.MIN_VALUE };
	private static final BigInteger LIMIT = BigInteger.valueOf(Long.MAX_VALUE);

	/** A decode rank's regions and one room's grant, with the grant and the bytes written as plain arrays. */
	private static final class World {
		final KVArgs args;
		final int[] pages;
		final int auxRow;
		final int[] slots;
		final boolean[][][] granted;
		GrantLedger ledger;
		// Something was reserved or written since the last restart.
		boolean dirty;
		// Per kind and region, how often each byte was written by the room's accepted frames.
		byte[][][] written;

		World(KVArgs args, int[] pages, int auxRow, int[] slots, boolean[][][] granted) {
			this.args = args;
			this.pages = pages;
			this.auxRow = auxRow;
			this.slots = slots;
			this.granted = granted;
			restart();
		}

		void restart() {
			dirty = false;
			ledger = GrantLedger.of(args, pages, auxRow, slots);
			if (written == null) {
				written = new byte[3][][];
				for (RegionKind k : RegionKind.values()) {
					List<MemoryRegion> rs = regions(k);
					written[k.ordinal()] = new byte[rs.size()][];
					for (int i = 0; i < rs.size(); i++) {
						written[k.ordinal()][i] = new byte[(int) rs.get(i).length()];
					}
				}
			}
			for (byte[][] kind : written) {
				for (byte[] region : kind) {
					Arrays.fill(region, (byte) 0);
				}
			}
		}

		List<MemoryRegion> regions(RegionKind kind) {
			return kind == RegionKind.KV ? args.kvRegions()
					: kind == RegionKind.AUX ? args.auxRegions() : args.stateRegions();
		}
	}

	/** A list as the peer sent it, and the payload the frame carried. */
	private record Frame(RegionKind kind, int[] regions, long[] offsets, int[] lengths, long payload) {

		int count() {
			return regions.length;
		}

		ScatterHeader header() {
			return new ScatterHeader(3, kind, regions.length, regions, offsets, lengths);
		}

		@Override
		public String toString() {
			return kind + " regions " + Arrays.toString(regions) + " offsets " + Arrays.toString(offsets) + " lengths "
					+ Arrays.toString(lengths) + " payload " + payload;
		}
	}

	@Test
	void aMillionScatterListsAgreeWithTheShapeAndByteModels() {
		SplittableRandom random = new SplittableRandom(20261204);
		long accepted = 0;
		long total = 0;
		long pieces = 0;
		for (int w = 0; w < 4_000; w++) {
			World world = world(random);
			for (int i = 0; i < 250; i++) {
				Frame f = frame(random, world);
				pieces += f.count();
				if (judge(world, f)) {
					accepted++;
				}
				total++;
			}
		}
		assertThat(total).isEqualTo(1_000_000);
		assertThat(pieces).isGreaterThan(2 * total);
		// Not vacuous: both answers occur often.
		assertThat(accepted).isBetween(total / 10, total - total / 10);
	}

	/** @return whether the frame was accepted, after checking the judges agree */
	private static boolean judge(World world, Frame f) {
		boolean shape = shapeAllows(f);
		ScatterHeader header = f.header();
		String problem = header.problem(f.payload());
		boolean validated = problem == null;
		// Plain comparisons in the loop: an assertion object per list would dominate the run.
		if (validated != shape || !validated && !problem.startsWith("malformed scatter list of room 3: ")) {
			fail("validate vs shape model for " + f + ": model " + shape + ", validate " + problem);
		}
		boolean model = shape && bytesAllow(world, f);
		boolean system = validated;
		if (system) {
			try {
				for (int i = 0; i < header.count(); i++) {
					DataHeader piece = header.piece(i);
					long address = world.ledger.destination(piece);
					if (address != world.regions(f.kind()).get(piece.region()).address() + piece.dstOffset()) {
						fail("wrong address " + address + " for " + piece);
					}
					world.ledger.reserve(piece);
				}
			}
			catch (WriteRefused refused) {
				system = false;
			}
			// Pieces before a refused one stay reserved.
			world.dirty = true;
		}
		if (system != model) {
			fail("decode vs byte model for " + f + ": model " + model + ", decode " + system);
		}
		if (model) {
			for (int i = 0; i < f.count(); i++) {
				byte[] bytes = world.written[f.kind().ordinal()][f.regions()[i]];
				for (long b = f.offsets()[i]; b < f.offsets()[i] + f.lengths()[i]; b++) {
					bytes[(int) b]++;
				}
			}
			world.dirty = true;
		}
		else if (world.dirty) {
			world.restart();
		}
		return model;
	}

	private static boolean shapeAllows(Frame f) {
		int n = f.count();
		if (n < 1 || n > ScatterHeader.MAX_PIECES) {
			return false;
		}
		BigInteger sum = BigInteger.ZERO;
		for (int i = 0; i < n; i++) {
			BigInteger end = BigInteger.valueOf(f.offsets()[i]).add(BigInteger.valueOf(f.lengths()[i]));
			if (f.regions()[i] < 0 || f.offsets()[i] < 0 || f.lengths()[i] < 1 || end.compareTo(LIMIT) > 0) {
				return false;
			}
			if (i > 0 && (f.regions()[i] < f.regions()[i - 1]
					|| f.regions()[i] == f.regions()[i - 1] && f.offsets()[i] < f.offsets()[i - 1])) {
				return false;
			}
			// Every piece before this one passed the checks above, so ends fit in a long from here on.
			long endI = end.longValue();
			for (int j = 0; j < i; j++) {
				if (f.regions()[i] == f.regions()[j]
						&& !(endI <= f.offsets()[j] || f.offsets()[j] + f.lengths()[j] <= f.offsets()[i])) {
					return false;
				}
			}
			sum = sum.add(BigInteger.valueOf(f.lengths()[i]));
		}
		return sum.equals(BigInteger.valueOf(f.payload()));
	}

	/** Called on a list of the right shape: offsets ≥ 0, lengths ≥ 1, ends below 2^63. */
	private static boolean bytesAllow(World world, Frame f) {
		List<MemoryRegion> regions = world.regions(f.kind());
		for (int i = 0; i < f.count(); i++) {
			int r = f.regions()[i];
			if (r >= regions.size()) {
				return false;
			}
			MemoryRegion region = regions.get(r);
			long start = f.offsets()[i];
			long end = start + f.lengths()[i];
			if (end > region.length()) {
				return false;
			}
			boolean[] items = world.granted[f.kind().ordinal()][r];
			byte[] written = world.written[f.kind().ordinal()][r];
			for (long b = start; b < end; b++) {
				if (!items[(int) (b / region.itemLen())] || written[(int) b] > 0) {
					return false;
				}
			}
		}
		return true;
	}

	private static World world(SplittableRandom r) {
		List<MemoryRegion> kv = regions(r, 1 + r.nextInt(3), 32, 24, BASE);
		List<MemoryRegion> aux = regions(r, r.nextInt(3), 16, 8, BASE << 1);
		List<MemoryRegion> state = regions(r, r.nextInt(3), 16, 8, BASE << 2);
		KVArgs args = KVArgs.builder().mla(true).kvRegions(kv).auxRegions(aux).stateRegions(state).build();
		int kvItems = (int) kv.stream().mapToLong(MemoryRegion::itemCount).min().orElse(1);
		int[] pages = pick(r, kvItems, 1 + r.nextInt(kvItems));
		int auxItems = (int) aux.stream().mapToLong(MemoryRegion::itemCount).min().orElse(1);
		int auxRow = r.nextInt(4) == 0 ? -1 : r.nextInt(auxItems);
		int stateItems = (int) state.stream().mapToLong(MemoryRegion::itemCount).min().orElse(1);
		int[] slots = pick(r, stateItems, r.nextInt(3));
		boolean[][][] granted = { mark(kv, pages), mark(aux, auxRow < 0 ? new int[0] : new int[] { auxRow }),
				mark(state, slots) };
		return new World(args, pages, auxRow, slots, granted);
	}

	private static List<MemoryRegion> regions(SplittableRandom r, int n, int maxItemLen, int maxItems, long base) {
		List<MemoryRegion> list = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			int itemLen = 1 + r.nextInt(maxItemLen);
			list.add(MemoryRegion.of(base + i * (1L << 20), (long) itemLen * (1 + r.nextInt(maxItems)), itemLen));
		}
		return list;
	}

	private static int[] pick(SplittableRandom r, int bound, int n) {
		int[] out = new int[n];
		for (int i = 0; i < n; i++) {
			out[i] = r.nextInt(bound);
		}
		return out;
	}

	private static boolean[][] mark(List<MemoryRegion> regions, int[] items) {
		boolean[][] m = new boolean[regions.size()][];
		for (int i = 0; i < regions.size(); i++) {
			m[i] = new boolean[(int) regions.get(i).itemCount()];
			for (int item : items) {
				m[i][item] = true;
			}
		}
		return m;
	}

	/**
	 * A list that starts well formed (ascending, disjoint pieces near granted items, sized in whole items or parts of
	 * them) and then takes a few mutations, each aimed at one rule.
	 */
	private static Frame frame(SplittableRandom r, World w) {
		RegionKind kind = RegionKind.values()[r.nextInt(8) < 6 ? 0 : 1 + r.nextInt(2)];
		List<MemoryRegion> regions = w.regions(kind);
		int n = 1 + r.nextInt(r.nextInt(8) == 0 ? 24 : 6);
		int[] reg = new int[n];
		long[] off = new long[n];
		int[] len = new int[n];
		int region = regions.isEmpty() ? 0 : r.nextInt(regions.size());
		long at = 0;
		for (int i = 0; i < n; i++) {
			if (!regions.isEmpty() && region < regions.size() - 1 && r.nextInt(4) == 0) {
				region++;
				at = 0;
			}
			MemoryRegion m = regions.isEmpty() ? MemoryRegion.of(BASE, 64, 8) : regions.get(region);
			int item = m.itemLen();
			boolean[] granted = regions.isEmpty() ? new boolean[0] : w.granted[kind.ordinal()][region];
			// On to the next granted item most of the time (the next item start otherwise), sometimes a byte off.
			long next = (at + item - 1) / item;
			while (r.nextInt(8) > 0 && next < granted.length && !granted[(int) next]) {
				next++;
			}
			at = next * item + (r.nextInt(8) == 0 ? r.nextInt(3) : 0);
			reg[i] = region;
			off[i] = at;
			len[i] = r.nextInt(3) == 0 ? 1 + r.nextInt(item) : item * (1 + (r.nextInt(6) == 0 ? 1 : 0));
			at += len[i];
		}
		long payload = 0;
		for (int l : len) {
			payload += l;
		}
		int mutations = r.nextBoolean() ? 0 : 1 + r.nextInt(2);
		for (int k = 0; k < mutations; k++) {
			int i = r.nextInt(n);
			switch (r.nextInt(10)) {
				case 0:
					// Overlap the previous piece.
					if (i > 0) {
						off[i] = off[i - 1] + r.nextInt(Math.max(1, len[i - 1]));
						reg[i] = reg[i - 1];
					}
					break;
				case 1:
					// Duplicate the previous piece.
					if (i > 0) {
						reg[i] = reg[i - 1];
						off[i] = off[i - 1];
						len[i] = len[i - 1];
					}
					break;
				case 2:
					// Swap two pieces.
					int j = r.nextInt(n);
					long o = off[i];
					off[i] = off[j];
					off[j] = o;
					int g = reg[i];
					reg[i] = reg[j];
					reg[j] = g;
					break;
				case 3:
					// Past the region's end, or into a region that does not exist.
					if (r.nextBoolean()) {
						off[i] += r.nextInt(4) * 64L;
					}
					else {
						reg[i] = r.nextBoolean() ? -1 : regions.size() + r.nextInt(2);
					}
					break;
				case 4:
					// Offsets and lengths at the ends of 64 bits.
					off[i] = HUGE[r.nextInt(HUGE.length)];
					if (r.nextBoolean()) {
						len[i] = Integer.MAX_VALUE - r.nextInt(2);
					}
					break;
				case 5:
					len[i] = r.nextInt(3) - 1;
					break;
				case 6:
					payload += r.nextBoolean() ? 1 : -1;
					break;
				case 7:
					// Repeat the first piece written by an earlier frame of the room, if any.
					repeatEarlier(w, kind, i, reg, off, len);
					break;
				default:
					off[i] += r.nextInt(3) - 1;
					break;
			}
		}
		if (mutations > 0 && r.nextInt(3) > 0) {
			// Lengths were changed by the mutations: most lists still carry what their lengths say.
			payload = 0;
			for (int l : len) {
				payload += l;
			}
		}
		if (r.nextInt(200) == 0) {
			return new Frame(kind, new int[0], new long[0], new int[0], 0);
		}
		return new Frame(kind, reg, off, len, payload);
	}

	private static void repeatEarlier(World w, RegionKind kind, int i, int[] reg, long[] off, int[] len) {
		byte[][] written = w.written[kind.ordinal()];
		for (int region = 0; region < written.length; region++) {
			for (int b = 0; b < written[region].length; b++) {
				if (written[region][b] > 0) {
					reg[i] = region;
					off[i] = b;
					len[i] = 1;
					return;
				}
			}
		}
	}
}
