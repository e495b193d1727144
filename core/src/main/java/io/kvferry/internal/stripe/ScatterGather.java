package io.kvferry.internal.stripe;

import java.util.Arrays;

import io.kvferry.spi.Block;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;

/**
 * Groups a chunk's small blocks for one connection into scatter blocks, so that a room of thousands of tiny pieces
 * (page size 1: one token of one layer buffer is a piece) travels as a few hundred frames instead of one per piece.
 * A small block of several chunks gives one piece per chunk (a head slice of a few tokens), or one piece gathered
 * from its chunks when they are adjacent on the receiver (a head's tokens re-laid into a head-major page, a token's
 * heads into a token-major one), so that re-laid KV costs the receiver one piece per destination run rather than one
 * per head and token. Large blocks pass through as they are, after the group gathered so far.
 *
 * <p>A group closes at {@link #MAX_PIECES} pieces or {@link #MAX_BYTES} bytes, whichever comes first. At page size 1
 * and Llama-3-8B's 2 KiB per token and layer buffer both bounds meet: 256 pieces of 2 KiB. That amortises the
 * per-frame costs (a header, Netty's outbound entry, decode's frame handling) 256 times, keeps the piece table at
 * 4 KiB (under 1 % of the payload) and the gathered write under the 1,024 buffers one {@code writev} takes, and still
 * leaves frames small beside the 4 MiB a stripe is dealt at a time, so a room spreads evenly over stripes and an
 * abort stops within half a MiB. A block of {@link #SMALL} bytes or more already pays its frame's cost many times
 * over and is sent as its own block.
 *
 * <p>The receiver wants a frame's pieces in ascending order of region, then offset: a group is closed when the plan
 * moves to a lower region, and sorted by offset within each region when it closes. One per stripe of a room's
 * {@link StripedFlow}, after the blocks were dealt, so that a room spreads over its stripes
 * as it did block by block. Not thread-safe: fed under the room's monitor.
 */
final class ScatterGather {

	/** Where gathered groups and the blocks left alone go, in order. */
	interface Out {

		/** Sends a block left alone as it is, or a group of pieces as one scatter block. */
		void send(Block block);
	}

	/** Most pieces in one scatter block (at most 256: the sort keeps a piece's position in the low 8 bits). */
	static final int MAX_PIECES = 256;
	/** Most payload bytes in one scatter block. */
	static final int MAX_BYTES = 512 << 10;
	/** Blocks of this many bytes or more are sent alone. */
	static final int SMALL = 64 << 10;
	// Offsets at or above this do not fit the sort key beside a position: such a piece is sent alone.
	private static final long MAX_KEYED_OFFSET = 1L << 55;

	private final Out out;
	private final SendGate gate;
	private long room;
	private RegionKind kind;
	private int n;
	private long bytes;
	private int[] regions;
	private long[] offsets;
	private int[] lengths;
	private long[] sources;
	// Per piece, its source chunks: their length (the piece's when one run) and the bytes between their starts.
	private int[] chunks;
	private long[] strides;
	// Pieces the next group's arrays start with: the size the last group reached, so that a room of a few small blocks
	// allocates a few entries per group rather than the full table, and a room of tiny pages grows to it once.
	private int capacity = MIN_CAPACITY;
	private static final int MIN_CAPACITY = 8;

	/**
	 * @param out where groups and the other blocks go
	 * @param gate the room's gate: the groups are sent behind it, and only blocks behind it are grouped
	 */
	ScatterGather(Out out, SendGate gate) {
		this.out = out;
		this.gate = gate;
	}

	/** Takes the next block: grouped when small, else sent after the group gathered so far. */
	void send(DataBlock block) {
		DataHeader h = block.header();
		int len = h.chunkLen();
		long payload = h.payloadLength();
		boolean strided = h.count() > 1;
		if (len < 1 || h.count() < 1 || payload >= SMALL || strided && h.dstStride() < len || h.dstOffset() < 0
				|| h.dstOffset() + (h.count() - 1L) * (strided ? h.dstStride() : 0) >= MAX_KEYED_OFFSET
				|| block.gate() != gate) {
			flush();
			out.send(block);
			return;
		}
		if (strided && h.dstStride() == len && block.srcStride() >= len) {
			// Adjacent on the receiver: one piece, gathered from the source's chunks.
			add(h.room(), h.kind(), h.region(), h.dstOffset(), (int) payload, block.srcAddress(), len,
					block.srcStride());
			return;
		}
		// A small strided block (a head slice of a few tokens) becomes one piece per chunk.
		for (int i = 0; i < h.count(); i++) {
			add(h.room(), h.kind(), h.region(), h.dstOffset() + i * h.dstStride(), len,
					block.srcAddress() + i * block.srcStride(), len, len);
		}
	}

	/**
	 * Takes a contiguous KV block behind this gather's gate, given by its fields: {@link #send} of a one-chunk block,
	 * with no block object made unless it is sent alone.
	 */
	void sendKv(long room, int region, long dstOffset, int length, long srcAddress) {
		if (length < 1 || length >= SMALL || dstOffset < 0 || dstOffset >= MAX_KEYED_OFFSET) {
			flush();
			out.send(Stripes.kvBlock(room, region, dstOffset, length, srcAddress, gate));
			return;
		}
		add(room, RegionKind.KV, region, dstOffset, length, srcAddress, length, length);
	}

	private void add(long room, RegionKind kind, int region, long dstOffset, int len, long srcAddress, int chunk,
			long stride) {
		if (n > 0 && (room != this.room || kind != this.kind || region < regions[n - 1] || n == MAX_PIECES
				|| bytes + len > MAX_BYTES)) {
			flush();
		}
		if (regions == null) {
			regions = new int[capacity];
			offsets = new long[capacity];
			lengths = new int[capacity];
			sources = new long[capacity];
			chunks = new int[capacity];
			strides = new long[capacity];
		}
		else if (n == regions.length) {
			int grown = Math.min(MAX_PIECES, 2 * n);
			regions = Arrays.copyOf(regions, grown);
			offsets = Arrays.copyOf(offsets, grown);
			lengths = Arrays.copyOf(lengths, grown);
			sources = Arrays.copyOf(sources, grown);
			chunks = Arrays.copyOf(chunks, grown);
			strides = Arrays.copyOf(strides, grown);
		}
		this.room = room;
		this.kind = kind;
		regions[n] = region;
		offsets[n] = dstOffset;
		lengths[n] = len;
		sources[n] = srcAddress;
		chunks[n] = chunk;
		strides[n] = stride;
		n++;
		bytes += len;
	}

	/** Sends the group gathered so far: one piece as its own block, several as a scatter block. */
	void flush() {
		if (n == 0) {
			return;
		}
		if (n == 1 && chunks[0] == lengths[0]) {
			out.send(new DataBlock(new DataHeader(room, kind, regions[0], offsets[0], lengths[0], 0, 1), sources[0], 0,
					gate));
		}
		else if (n == 1) {
			out.send(new DataBlock(new DataHeader(room, kind, regions[0], offsets[0], chunks[0], chunks[0],
					lengths[0] / chunks[0]), sources[0], strides[0], gate));
		}
		else {
			sortByOffset();
			// The arrays now belong to the block: the next group gets new ones, as large as this one needed.
			out.send(new ScatterBlock(new ScatterHeader(room, kind, n, regions, offsets, lengths), sources, strides,
					chunks, gate));
			capacity = Math.max(MIN_CAPACITY, n);
			regions = null;
			offsets = null;
			lengths = null;
			sources = null;
			chunks = null;
			strides = null;
		}
		n = 0;
		bytes = 0;
	}

	/** Sorts each region's run of pieces by destination offset (regions are already ascending). */
	private void sortByOffset() {
		long[] keys = null;
		for (int from = 0; from < n;) {
			int to = from + 1;
			boolean sorted = true;
			while (to < n && regions[to] == regions[from]) {
				sorted &= offsets[to] > offsets[to - 1];
				to++;
			}
			if (!sorted) {
				if (keys == null) {
					keys = new long[n];
				}
				for (int i = from; i < to; i++) {
					keys[i] = offsets[i] << 8 | (i - from);
				}
				Arrays.sort(keys, from, to);
				long[] o = Arrays.copyOfRange(offsets, from, to);
				int[] l = Arrays.copyOfRange(lengths, from, to);
				long[] s = Arrays.copyOfRange(sources, from, to);
				int[] c = Arrays.copyOfRange(chunks, from, to);
				long[] t = Arrays.copyOfRange(strides, from, to);
				for (int i = from; i < to; i++) {
					int at = (int) (keys[i] & 0xFF);
					offsets[i] = o[at];
					lengths[i] = l[at];
					sources[i] = s[at];
					chunks[i] = c[at];
					strides[i] = t[at];
				}
			}
			from = to;
		}
	}
}
