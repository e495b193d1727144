package io.kvferry.transport.synthetic;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;

import io.kvferry.StateKind;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.PeerLayout;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.RegionLayout;
import org.jspecify.annotations.Nullable;

/**
 * One room a synthetic rank serves: its blocks (a run of consecutive destination pages of one KV buffer, an aux row,
 * a state slot), dealt round-robin over the session's stripes, and what each stripe sent of it. Block {@code b} goes on
 * stripe {@code b mod width}; a stripe walks its blocks in order on its own thread, so its cursor, byte count and
 * checksum are that thread's alone, and the stripe that finishes last hands them to stripe 0 for the Success.
 */
final class ServedRoom {

	/** Most bytes of consecutive pages one data block carries: the bytes a stripe fills and hands over at a time. */
	static final int BLOCK_BYTES = 256 << 10;

	final long id;
	private final PeerLayout rank;
	private final PeerLayout decode;
	private final int[] dstPages;
	private final long firstPage;
	// Runs of consecutive destination pages: where each starts in dstPages, and how many pages it has.
	private final int[] runStart;
	private final int[] runLength;
	private final int runs;
	private final int kvRegions;
	private final int auxRow;
	private final int auxBlocks;
	private final int[][] stateSlots;
	private final int blocks;
	final int width;
	private final int[] next;
	private final long[] sent;
	private final @Nullable CRC32C[] checksums;
	// Stripes whose share of the room is not sent yet.
	private final AtomicInteger unsent = new AtomicInteger();
	// Set on stripe 0 when decode aborted the room: no stripe sends another block of it.
	volatile boolean aborted;

	/**
	 * @param rank the synthetic rank's layout
	 * @param decode the decode rank's layout
	 * @param req a request {@link #refusal} found servable
	 * @param width the session's stripes
	 * @param keepChecksums whether each stripe keeps a CRC32C of what it sent
	 */
	ServedRoom(PeerLayout rank, PeerLayout decode, KVMessage.TransferRequest req, int width, boolean keepChecksums) {
		this.id = req.room();
		this.rank = rank;
		this.decode = decode;
		this.dstPages = req.dummy() ? new int[0] : req.dstPages();
		this.firstPage = req.decodePrefixLen() / decode.pageSize();
		this.kvRegions = dstPages.length == 0 ? 0 : rank.kv().size();
		int maxPages = Math.max(1, BLOCK_BYTES / maxItemLen(rank.kv()));
		int[] starts = new int[dstPages.length];
		int[] lengths = new int[dstPages.length];
		int n = 0;
		for (int i = 0; i < dstPages.length; i++) {
			if (n > 0 && dstPages[i] == dstPages[i - 1] + 1 && lengths[n - 1] < maxPages) {
				lengths[n - 1]++;
			}
			else {
				starts[n] = i;
				lengths[n++] = 1;
			}
		}
		this.runStart = starts;
		this.runLength = lengths;
		this.runs = n;
		this.auxRow = req.dummy() ? -1 : req.auxIndex();
		this.auxBlocks = auxRow < 0 ? 0 : rank.aux().size();
		this.stateSlots = req.dummy() ? new int[rank.state().size()][] : perRegion(rank.stateKinds(),
				rank.state().size(), req.stateIndices(), req.stateCounts());
		int stateBlocks = 0;
		for (int i = 0; i < stateSlots.length; i++) {
			if (stateSlots[i] == null) {
				stateSlots[i] = new int[0];
			}
			stateBlocks += stateSlots[i].length;
		}
		this.blocks = kvRegions * runs + auxBlocks + stateBlocks;
		this.width = width;
		this.next = new int[width];
		this.sent = new long[width];
		this.checksums = new CRC32C[width];
		for (int s = 0; s < width; s++) {
			next[s] = s;
			checksums[s] = keepChecksums ? new CRC32C() : null;
		}
		unsent.set(Math.min(width, blocks));
	}

	/**
	 * Checks a request against decode's layout before anything of it is sent: decode checks every write against the
	 * room's own pages anyway, but a synthetic rank must not fill a block that names no item of decode's.
	 *
	 * @return why the room cannot be served, or null
	 */
	static @Nullable String refusal(PeerLayout decode, KVMessage.TransferRequest req) {
		if (req.dummy()) {
			return null;
		}
		if (req.decodePrefixLen() % decode.pageSize() != 0) {
			return "decodePrefixLen " + req.decodePrefixLen() + " is not whole pages of " + decode.pageSize()
					+ " tokens";
		}
		String why = outside("page", req.dstPages(), decode.kv());
		if (why == null && req.auxIndex() != -1) {
			why = decode.aux().isEmpty() ? "aux row " + req.auxIndex() + " asked, but decode registered no aux buffer"
					: outside("aux row", new int[] { req.auxIndex() }, decode.aux());
		}
		if (why == null && req.stateIndices().length > 0) {
			why = decode.state().isEmpty() ? "state slots asked, but decode registered no state buffer"
					: outside("state slot", req.stateIndices(), decode.state());
		}
		if (why == null && req.stateCounts().length > 0 && req.stateCounts().length != components(decode.stateKinds())) {
			why = req.stateCounts().length + " state slot lists (expected: " + components(decode.stateKinds())
					+ ", one per state component)";
		}
		return why;
	}

	private static @Nullable String outside(String what, int[] indices, List<RegionLayout> regions) {
		long items = Long.MAX_VALUE;
		for (RegionLayout r : regions) {
			items = Math.min(items, r.itemCount());
		}
		for (int i : indices) {
			if (i < 0 || i >= items) {
				return what + " " + i + " outside decode's 0.." + (items - 1);
			}
		}
		return null;
	}

	/** @return how many stripes are to send some of the room */
	int stripesWithBytes() {
		return Math.min(width, blocks);
	}

	/** @return the next block stripe {@code s} sends, or -1 when its share is sent; on the stripe's thread */
	int nextBlock(int s) {
		int b = next[s];
		return b < blocks ? b : -1;
	}

	/** Moves stripe {@code s} past block {@code b}, its next; on the stripe's thread. */
	void advance(int s, int b) {
		next[s] = b + width;
	}

	/** Fills block {@code b} at {@code address}: its items, one after the other, as the pattern writes them. */
	void fill(int b, SyntheticPattern pattern, long address) {
		int kvBlocks = kvRegions * runs;
		if (b < kvBlocks) {
			int region = b / runs;
			int run = b % runs;
			int itemLen = rank.kv().get(region).itemLen();
			long ordinal = firstPage + runStart[run];
			for (int i = 0; i < runLength[run]; i++) {
				pattern.fill(rank, id, RegionKind.KV, region, ordinal + i, address + (long) i * itemLen, itemLen);
			}
		}
		else if (b < kvBlocks + auxBlocks) {
			int region = b - kvBlocks;
			pattern.fill(rank, id, RegionKind.AUX, region, 0, address, rank.aux().get(region).itemLen());
		}
		else {
			int[] at = stateBlock(b - kvBlocks - auxBlocks);
			pattern.fill(rank, id, RegionKind.STATE, at[0], at[1], address, rank.state().get(at[0]).itemLen());
		}
	}

	/** What stripe {@code s} handed decode: counted for its fence or the Success, on the stripe's thread. */
	void sent(int s, long address, int length) {
		sent[s] += length;
		CRC32C crc = checksums[s];
		if (crc != null) {
			crc.update(NativeMemory.byteBuffer(address, length));
		}
	}

	/** @return payload bytes stripe {@code s} sent */
	long sentOn(int s) {
		return sent[s];
	}

	/** @return the CRC32C of what stripe {@code s} sent, or {@link KVMessage#NO_CHECKSUM} */
	long checksumOn(int s) {
		CRC32C crc = checksums[s];
		return crc == null ? KVMessage.NO_CHECKSUM : crc.getValue();
	}

	/** @return whether this was the last stripe to finish its share (the room's Success is due) */
	boolean shareSent() {
		return unsent.decrementAndGet() == 0;
	}

	/** @return what decode is told of block {@code b}: where its bytes land */
	DataHeader header(int b) {
		int kvBlocks = kvRegions * runs;
		if (b < kvBlocks) {
			int region = b / runs;
			int run = b % runs;
			int itemLen = decode.kv().get(region).itemLen();
			return new DataHeader(id, RegionKind.KV, region, (long) dstPages[runStart[run]] * itemLen,
					runLength[run] * itemLen, 0, 1);
		}
		if (b < kvBlocks + auxBlocks) {
			int region = b - kvBlocks;
			int itemLen = decode.aux().get(region).itemLen();
			return new DataHeader(id, RegionKind.AUX, region, (long) auxRow * itemLen, itemLen, 0, 1);
		}
		int[] at = stateBlock(b - kvBlocks - auxBlocks);
		int itemLen = decode.state().get(at[0]).itemLen();
		return new DataHeader(id, RegionKind.STATE, at[0], (long) stateSlots[at[0]][at[1]] * itemLen, itemLen, 0, 1);
	}

	/** @return the state region and the slot's position in its list of the {@code k}-th state block */
	private int[] stateBlock(int k) {
		int region = 0;
		while (k >= stateSlots[region].length) {
			k -= stateSlots[region].length;
			region++;
		}
		return new int[] { region, k };
	}

	private static int maxItemLen(List<RegionLayout> regions) {
		int max = 1;
		for (RegionLayout r : regions) {
			max = Math.max(max, r.itemLen());
		}
		return max;
	}

	/**
	 * @return the slots each state region is written at: its component's list (the distinct declared kinds in the
	 *         order they first appear), or the one list for every region when no kinds are declared
	 */
	private static int[][] perRegion(List<StateKind> kinds, int regions, int[] flat, int[] counts) {
		int[][] out = new int[regions][];
		List<StateKind> components = kinds.stream().distinct().toList();
		for (int i = 0; i < regions; i++) {
			if (counts.length == 0 || kinds.isEmpty()) {
				out[i] = flat;
				continue;
			}
			int c = components.indexOf(kinds.get(i));
			int at = 0;
			for (int k = 0; k < c; k++) {
				at += counts[k];
			}
			out[i] = c < counts.length ? Arrays.copyOfRange(flat, at, at + counts[c]) : new int[0];
		}
		return out;
	}

	private static int components(List<StateKind> kinds) {
		return kinds.isEmpty() ? 1 : (int) kinds.stream().distinct().count();
	}
}
