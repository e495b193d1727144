package io.kvferry.test.rogue;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.test.rogue.RoguePrefillWorld.Write;
import org.jspecify.annotations.Nullable;

/**
 * What the rogue prefill writes into decode's pages: each kind of write, honest or forged, counted against the
 * room's grant so that the world knows which rooms decode must fail.
 */
final class RoguePrefillWrites {

	private final RoguePrefillWorld world;

	RoguePrefillWrites(RoguePrefillWorld world) {
		this.world = world;
	}

	/** @return the rogue's source pages for the room's positions, filled with the room's pattern on first use */
	int[] source(RoomModel m) {
		if (m.srcPages != null) {
			return m.srcPages;
		}
		if (world.nextSrcPage + m.pages.length > RoguePrefillWorld.SRC_PAGES) {
			throw new IllegalStateException("the rogue's memory is used up: " + world.nextSrcPage + " pages");
		}
		int[] src = new int[m.pages.length];
		for (int i = 0; i < src.length; i++) {
			src[i] = world.nextSrcPage++;
		}
		m.srcPages = src;
		m.srcAux = m.aux >= 0 ? world.nextSrcAux++ : -1;
		world.rogueMem.fill(m.id, src, m.srcAux, new int[0]);
		return src;
	}

	MemoryRegion kv(int buffer) {
		return world.rogueMem.kvArgs().kvRegions().get(buffer);
	}

	/**
	 * The rogue writes bytes of one of its rooms.
	 *
	 * @param buffer, position, a, b pick the buffer, the page position and the bytes (each reduced to what the room
	 *        has)
	 */
	void write(int pick, Write kind, int stripe, int buffer, int position, int a, int b) {
		RoomModel m = world.asked(pick);
		if (m == null) {
			return;
		}
		// Picked among the rooms the rogue was asked.
		RoguePrefillPeer.Asked asked = Objects.requireNonNull(world.rogue.asked(m.id), "asked");
		RogueLink link = world.rogue.link(asked.session(), stripe % asked.session().width());
		if (link == null) {
			return;
		}
		int[] srcPages = source(m);
		int s = stripe % asked.session().width();
		int buf = Math.floorMod(buffer, world.kvBuffers);
		int pos = Math.floorMod(position, m.pages.length);
		int x = Math.floorMod(a, world.itemLen);
		int y = Math.floorMod(b, world.itemLen);
		int from = Math.min(x, y);
		int to = Math.max(x, y) + 1;
		long dstItem = (long) m.pages[pos] * world.itemLen;
		long srcItem = kv(buf).itemAddress(srcPages[pos]);
		RoomModel.Write w = null;
		String bad = null;
		switch (kind) {
			case WHOLE_ITEM -> w = kvWrite(s, m, buf, dstItem, srcItem, world.itemLen);
			case HEAD -> w = kvWrite(s, m, buf, dstItem, srcItem, to);
			case TAIL -> w = kvWrite(s, m, buf, dstItem + from, srcItem + from, world.itemLen - from);
			case MIDDLE -> w = kvWrite(s, m, buf, dstItem + from, srcItem + from, to - from);
			case STRIDED -> {
				// Chunks of 1..16 bytes, 0..15 bytes apart, as many as fit in the item from a start that leaves room.
				int chunk = 1 + Math.floorMod(a, 16);
				int stride = chunk + Math.floorMod(b, 16);
				int count = 1 + (world.itemLen - chunk) / stride;
				count = 1 + Math.floorMod(a ^ b, count);
				int span = (count - 1) * stride + chunk;
				int start = Math.floorMod(a + b, world.itemLen - span + 1);
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, dstItem + start, chunk, stride,
						count), srcItem + start, stride);
			}
			case TWO_PAGES -> {
				if (pos + 1 < m.pages.length && m.pages[pos + 1] == m.pages[pos] + 1) {
					// Consecutive positions on consecutive pages: their source pages are consecutive too.
					w = kvWrite(s, m, buf, dstItem + from, srcItem + from, world.itemLen - from + to);
				}
				else {
					w = kvWrite(s, m, buf, dstItem, srcItem, world.itemLen);
				}
			}
			case AUX_ROW -> {
				if (m.aux < 0) {
					return;
				}
				int ax = Math.floorMod(a, world.auxLen);
				int ay = Math.floorMod(b, world.auxLen);
				int af = Math.min(ax, ay);
				int at = Math.max(ax, ay) + 1;
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.AUX, 0, (long) m.aux * world.auxLen + af, at - af,
						0, 1), world.rogueMem.kvArgs().auxRegions().get(0).itemAddress(m.srcAux) + af, 0);
			}
			case SCATTER, SCATTER_OVERLAPPING -> {
				scatter(m, link, s, kind == Write.SCATTER_OVERLAPPING, buf, pos, a, b);
				return;
			}
			case SCATTER_AGAIN -> {
				scatterAgain(m, link, s, a);
				return;
			}
			case DUPLICATE -> {
				if (m.writes.isEmpty()) {
					return;
				}
				RoomModel.Write before = m.writes.get(Math.floorMod(a, m.writes.size()));
				w = new RoomModel.Write(s, before.header(), before.srcAddress(), before.srcStride());
			}
			case UNGRANTED_PAGE -> {
				int page = world.ungranted(m, a);
				bad = "the rogue wrote page " + page + ", which the room did not ask for";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, (long) page * world.itemLen + from,
						to - from, 0, 1), srcItem + from, 0);
			}
			case OTHER_ROOMS_PAGE -> {
				RoomModel other = world.pick(a, r -> r != m && !r.recycled);
				if (other == null) {
					return;
				}
				int page = other.pages[Math.floorMod(b, other.pages.length)];
				bad = "the rogue wrote page " + page + " of " + other;
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, (long) page * world.itemLen, world.itemLen, 0,
						1), srcItem, 0);
			}
			case NO_SUCH_REGION -> {
				bad = "the rogue wrote a region decode does not have";
				int region = Math.floorMod(a, 3) == 0 ? -1 : world.kvBuffers - 1 + Math.floorMod(a, 3);
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, region, dstItem, world.itemLen, 0, 1),
						srcItem, 0);
			}
			case PAST_REGION_END -> {
				bad = "the rogue wrote past the region's end";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, (long) RoguePrefillWorld.PAGES * world.itemLen - from,
						world.itemLen, 0, 1), srcItem, 0);
			}
			case NEGATIVE_OFFSET -> {
				bad = "the rogue wrote at a negative offset";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, -1L - from, world.itemLen, 0, 1),
						srcItem, 0);
			}
			case OVERFLOW -> {
				bad = "the rogue wrote a header whose end overflows 64 bits";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, dstItem, 8, Long.MAX_VALUE / 2 + a,
						3), srcItem, 8);
			}
			case EMPTY -> {
				bad = "the rogue wrote an empty block";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, dstItem, (a & 1) == 0 ? 0 : 8,
						8, (a & 1) == 0 ? 1 : 0), srcItem, 8);
			}
			case OVERLAPPING_CHUNKS -> {
				bad = "the rogue wrote chunks that overlap";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.KV, buf, dstItem, 16, 8, 2), srcItem, 8);
			}
			case UNGRANTED_AUX -> {
				int row = m.aux >= 0 ? (m.aux + 1 + Math.floorMod(a, RoguePrefillWorld.AUX_ROWS - 1)) % RoguePrefillWorld.AUX_ROWS : Math.floorMod(a,
						RoguePrefillWorld.AUX_ROWS);
				bad = "the rogue wrote aux row " + row + ", which the room did not ask for";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.AUX, 0, (long) row * world.auxLen, world.auxLen, 0, 1),
						world.rogueMem.kvArgs().auxRegions().get(0).itemAddress(0), 0);
			}
			case STATE_REGION -> {
				bad = "the rogue wrote a state region decode does not have";
				w = new RoomModel.Write(s, new DataHeader(m.id, RegionKind.STATE, 0, 0, 8, 0, 1), srcItem, 0);
			}
		}
		// Every kind of write sets it.
		send(m, Objects.requireNonNull(w, "write"), bad, link);
	}

	/**
	 * Writes pieces of several of the room's pages in one scatter frame: in ascending order of buffer and offset, none
	 * overlapping another, unless {@code overlapping} (the last piece then repeats part of the one before).
	 */
	private void scatter(RoomModel m, RogueLink link, int stripe, boolean overlapping, int buffer, int position, int a,
			int b) {
		int[] srcPages = source(m);
		int n = 1 + Math.floorMod(a, 6);
		List<long[]> pieces = new ArrayList<>();
		for (int i = 0; i < n; i++) {
			int buf = Math.floorMod(buffer + i, world.kvBuffers);
			int pos = Math.floorMod(position + i, m.pages.length);
			int from = Math.floorMod(a * (i + 1), world.itemLen);
			int len = 1 + Math.floorMod(b * (i + 1), world.itemLen - from);
			pieces.add(new long[] { buf, (long) m.pages[pos] * world.itemLen + from, len,
					kv(buf).itemAddress(srcPages[pos]) + from });
		}
		List<long[]> kept = ascending(pieces);
		if (overlapping) {
			long[] last = kept.get(kept.size() - 1);
			kept.add(new long[] { last[0], last[1], last[2], last[3] });
		}
		scatter(m, link, stripe, kept, overlapping ? "the rogue scattered overlapping pieces" : null);
	}

	/**
	 * Writes again, as pieces of one scatter frame, bytes the room's earlier one-chunk KV writes (of any kind of frame)
	 * already wrote: pieces that are each granted, in order and apart from one another, whose only fault is that their
	 * bytes landed before. With enough bytes left unwritten, such a frame keeps the byte counts consistent.
	 */
	private void scatterAgain(RoomModel m, RogueLink link, int stripe, int a) {
		List<long[]> pieces = new ArrayList<>();
		int n = 1 + Math.floorMod(a, 3);
		for (int i = 0; i < m.writes.size() && pieces.size() < n; i++) {
			RoomModel.Write w = m.writes.get(Math.floorMod(a + i, m.writes.size()));
			DataHeader h = w.header();
			if (h.kind() == RegionKind.KV && h.count() == 1) {
				pieces.add(new long[] { h.region(), h.dstOffset(), h.chunkLen(), w.srcAddress() });
			}
		}
		if (!pieces.isEmpty()) {
			scatter(m, link, stripe, ascending(pieces), null);
		}
	}

	/** @return the pieces in ascending order of buffer and offset, each one overlapping a piece before it left out */
	private static List<long[]> ascending(List<long[]> pieces) {
		pieces.sort((x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
		List<long[]> kept = new ArrayList<>();
		for (long[] p : pieces) {
			long[] prev = kept.isEmpty() ? null : kept.get(kept.size() - 1);
			if (prev == null || prev[0] != p[0] || prev[1] + prev[2] <= p[1]) {
				kept.add(p);
			}
		}
		return kept;
	}

	/**
	 * Sends {@code kept} ({buffer, offset, length, source address} each) as one scatter frame, counting each piece
	 * against the room's grant as {@link #send} counts a write.
	 *
	 * @param bad why the frame as a whole is wrong, or null when only its pieces can make it so
	 */
	private void scatter(RoomModel m, RogueLink link, int stripe, List<long[]> kept, @Nullable String bad) {
		int count = kept.size();
		int[] regions = new int[count];
		long[] offsets = new long[count];
		int[] lengths = new int[count];
		long[] src = new long[count];
		for (int i = 0; i < count; i++) {
			long[] p = kept.get(i);
			regions[i] = (int) p[0];
			offsets[i] = p[1];
			lengths[i] = (int) p[2];
			src[i] = p[3];
		}
		ScatterHeader header = new ScatterHeader(m.id, RegionKind.KV, count, regions, offsets, lengths);
		world.step("rogue scatters " + header + " on stripe " + stripe + " of " + m + (bad == null ? "" : " (" + bad
				+ ")"));
		world.touched(m);
		String wrong = bad;
		if ((m.fenced & 1 << stripe) != 0 || m.reported) {
			m.clean = false;
		}
		for (int i = 0; i < count; i++) {
			RoomModel.Write w = new RoomModel.Write(stripe, header.piece(i), src[i], 0);
			String piece = countGranted(m, w);
			wrong = wrong != null ? wrong : piece;
			if (bad == null) {
				m.writes.add(w);
			}
			m.tally(w);
		}
		if (wrong != null) {
			m.clean = false;
			refused(m, stripe, wrong);
			world.doom(Objects.requireNonNull(world.rogue.asked(m.id), "asked").session());
		}
		link.scatter(header, src);
		world.settle();
		world.check();
	}

	RoomModel.Write kvWrite(int stripe, RoomModel m, int buf, long dst, long src, int len) {
		return new RoomModel.Write(stripe, new DataHeader(m.id, RegionKind.KV, buf, dst, len, 0, 1), src, 0);
	}

	/** Sends a write, counting what it covers of the room's grant and tallying it on its stripe. */
	void send(RoomModel m, RoomModel.Write w, @Nullable String bad, RogueLink link) {
		world.touched(m);
		world.step("rogue writes " + w.header() + " on stripe " + w.stripe() + " of " + m + (bad == null ? "" : " (" + bad
				+ ")"));
		String wrong = bad;
		if (wrong == null) {
			wrong = countGranted(m, w);
			m.writes.add(w);
		}
		if (wrong != null) {
			m.clean = false;
			refused(m, w.stripe(), wrong);
			if (bad != null) {
				world.doom(Objects.requireNonNull(world.rogue.asked(m.id), "asked").session());
			}
		}
		if ((m.fenced & 1 << w.stripe()) != 0 || m.reported) {
			// Bytes after the stripe's fence or after a report: the honest sums no longer tell what landed.
			m.clean = false;
		}
		m.tally(w);
		link.data(w.header(), w.srcAddress(), w.srcStride());
		world.settle();
		world.check();
	}

	/**
	 * @return why the write is wrong, or null when it writes only granted bytes of the room, none twice, and leaves no
	 *         item cut into more runs of equally written bytes than decode keeps for an honest writer
	 */
	@Nullable String countGranted(RoomModel m, RoomModel.Write w) {
		DataHeader h = w.header();
		if (h.kind() == RegionKind.AUX) {
			long start = h.dstOffset() - (long) m.aux * world.auxLen;
			boolean twice = m.count(w, m.auxCounts, (int) start, (int) (start + h.chunkLen()));
			return twice ? "the rogue wrote aux bytes twice"
					: runs(m.auxCounts, 0, world.auxLen) > RoguePrefillWorld.AUX_RUNS ? "the rogue cut the aux row into more than " + RoguePrefillWorld.AUX_RUNS
							+ " runs" : null;
		}
		boolean twice = false;
		String cut = null;
		for (int c = 0; c < h.count(); c++) {
			long start = h.dstOffset() + (h.count() == 1 ? 0 : c * h.dstStride());
			long end = start + h.chunkLen();
			for (long item = start / world.itemLen; item * world.itemLen < end; item++) {
				int pos = RoguePrefillWorld.indexOf(m.pages, (int) item);
				int from = (int) (Math.max(start, item * world.itemLen) - item * world.itemLen);
				int to = (int) (Math.min(end, (item + 1) * world.itemLen) - item * world.itemLen);
				twice |= m.count(w, m.kvCounts[h.region()], pos * world.itemLen + from, pos * world.itemLen + to);
				if (cut == null && runs(m.kvCounts[h.region()], pos * world.itemLen, world.itemLen) > RoguePrefillWorld.KV_RUNS) {
					cut = "the rogue cut page " + item + " of region " + h.region() + " into more than " + RoguePrefillWorld.KV_RUNS
							+ " runs";
				}
			}
		}
		return twice ? "the rogue wrote bytes of region " + h.region() + " twice" : cut;
	}

	/** @return runs of equally written bytes in {@code counts[from, from + len)} */
	private static int runs(byte[] counts, int from, int len) {
		int runs = 1;
		for (int b = from + 1; b < from + len; b++) {
			if (counts[b] != counts[b - 1]) {
				runs++;
			}
		}
		return runs;
	}

	/**
	 * As {@link #judged}, for a write: decode refuses one as it reads it, so on virtual time the room must have failed
	 * by the end of the step.
	 */
	private void refused(RoomModel m, int stripe, String why) {
		if (judged(m, stripe, why) && world.virtual()) {
			m.refuseNow = why;
		}
	}

	/**
	 * Decode must fail the room for a frame, when it sees the frame while the room is live: always on virtual time
	 * (where a step's frame is read in the step); on real time only for a frame on stripe 0 before any report, which
	 * decode reads before any report that could let the room end first.
	 *
	 * @return whether this frame is the one the room must now fail for (not when an earlier one already was)
	 */
	boolean judged(RoomModel m, int stripe, String why) {
		if (m.mustFail == null && !m.isTerminal() && (world.virtual() || stripe == 0 && !m.reported)) {
			m.mustFail = why;
			return true;
		}
		return false;
	}
}
