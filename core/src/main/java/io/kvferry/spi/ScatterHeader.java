package io.kvferry.spi;

import java.util.Objects;

import io.kvferry.ProtocolException;
import org.jspecify.annotations.Nullable;

/**
 * Where a scatter frame's payload goes on the receiver: many pieces of one room, piece {@code i} of
 * {@code lengths[i]} bytes at {@code dstOffsets[i]} in region {@code regions[i]} of {@code kind}. The payload is the
 * pieces' bytes one after another, in piece order. Each piece is one contiguous write, the same as a one-chunk
 * {@link DataHeader} ({@link #piece}); a receiver checks every piece against its grant as it checks a data header.
 *
 * <p>Pieces are in ascending order of region, then of offset, and never overlap ({@link #validate}): the receiver
 * then sees a piece that repeats or overlaps another of its frame by looking at its neighbour only, whatever the
 * number of pieces. Writes that overlap across frames are its ledger's to refuse.
 *
 * <p>The arrays are the header's own; neither side changes them after building it.
 */
public final class ScatterHeader {

	/** Most pieces one frame may carry: the receiver buffers the piece table, 16 bytes a piece, before the payload. */
	public static final int MAX_PIECES = 4096;

	private final long room;
	private final RegionKind kind;
	private final int count;
	private final int[] regions;
	private final long[] dstOffsets;
	private final int[] lengths;

	/**
	 * @param room the room every piece belongs to
	 * @param kind which region list every piece writes
	 * @param count pieces, the first {@code count} entries of each array
	 * @param regions per piece, its region's index in that list
	 * @param dstOffsets per piece, the byte offset of its first byte in the region
	 * @param lengths per piece, its bytes
	 */
	public ScatterHeader(long room, RegionKind kind, int count, int[] regions, long[] dstOffsets, int[] lengths) {
		this.room = room;
		this.kind = Objects.requireNonNull(kind, "kind");
		this.regions = Objects.requireNonNull(regions, "regions");
		this.dstOffsets = Objects.requireNonNull(dstOffsets, "dstOffsets");
		this.lengths = Objects.requireNonNull(lengths, "lengths");
		if (count < 0 || count > regions.length || count > dstOffsets.length || count > lengths.length) {
			throw new IllegalArgumentException("count : " + count + " (expected: 0.. the arrays' length)");
		}
		this.count = count;
	}

	public long room() {
		return room;
	}

	public RegionKind kind() {
		return kind;
	}

	/** @return the number of pieces */
	public int count() {
		return count;
	}

	public int region(int piece) {
		return regions[Objects.checkIndex(piece, count)];
	}

	public long dstOffset(int piece) {
		return dstOffsets[Objects.checkIndex(piece, count)];
	}

	public int length(int piece) {
		return lengths[Objects.checkIndex(piece, count)];
	}

	/** @return the payload's bytes: the pieces' lengths summed (negative lengths included, as given) */
	public long payloadLength() {
		long sum = 0;
		for (int i = 0; i < count; i++) {
			sum += lengths[i];
		}
		return sum;
	}

	/** @return piece {@code i} as the one-chunk data header a receiver checks and writes it as */
	public DataHeader piece(int i) {
		Objects.checkIndex(i, count);
		return new DataHeader(room, kind, regions[i], dstOffsets[i], lengths[i], lengths[i], 1);
	}

	/**
	 * Checks the list's shape, with exact 64-bit arithmetic, before a receiver asks its grant about any piece: 1 to
	 * {@link #MAX_PIECES} pieces; each of at least one byte, at an offset ≥ 0 in a region ≥ 0, ending before 2^63;
	 * pieces in ascending order of region then offset, none starting before the previous one of its region ended
	 * (so no byte of the frame is written twice); the lengths summing to the frame's payload. What a region holds
	 * and which of its items the room was granted is the receiver's grant to judge, piece by piece.
	 *
	 * @param payloadLength the bytes the frame carries after its header
	 * @throws ProtocolException naming the first piece and what is wrong with it
	 */
	public void validate(long payloadLength) {
		String problem = problem(payloadLength);
		if (problem != null) {
			throw new ProtocolException(problem);
		}
	}

	/**
	 * As {@link #validate}, without throwing.
	 *
	 * @return null when the list has the right shape for {@code payloadLength} bytes, else what is wrong, naming
	 *         the first bad piece
	 */
	public @Nullable String problem(long payloadLength) {
		if (count < 1 || count > MAX_PIECES) {
			return "malformed scatter list of room " + room + ": " + count + " pieces (expected: 1.." + MAX_PIECES
					+ ")";
		}
		long sum = 0;
		for (int i = 0; i < count; i++) {
			int region = regions[i];
			long offset = dstOffsets[i];
			int length = lengths[i];
			if (region < 0 || offset < 0 || length < 1) {
				return bad(i, "region " + region + ", offset " + offset + ", length " + length + " (expected: region "
						+ "and offset >= 0, length >= 1)");
			}
			if (offset > Long.MAX_VALUE - length) {
				return bad(i, "bytes [" + offset + ", " + offset + " + " + length + ") end beyond 2^63");
			}
			if (i > 0) {
				int prevRegion = regions[i - 1];
				long prevOffset = dstOffsets[i - 1];
				long prevEnd = prevOffset + lengths[i - 1];
				if (region < prevRegion || region == prevRegion && offset < prevOffset) {
					return bad(i, at(i) + " comes after piece " + (i - 1) + " at " + at(i - 1) + " (expected: pieces "
							+ "in ascending order of region, then offset)");
				}
				if (region == prevRegion && offset == prevOffset && length == lengths[i - 1]) {
					return bad(i, at(i) + " duplicates piece " + (i - 1));
				}
				if (region == prevRegion && offset < prevEnd) {
					return bad(i, at(i) + " overlaps piece " + (i - 1) + " at " + at(i - 1) + " (bytes [" + offset + ", "
							+ Math.min(prevEnd, offset + length) + ") written twice)");
				}
			}
			sum += length;
		}
		if (sum != payloadLength) {
			return "malformed scatter list of room " + room + ": its " + count + " pieces sum to " + sum + " bytes "
					+ "but the frame carries " + payloadLength;
		}
		return null;
	}

	private String at(int i) {
		return kind + " region " + regions[i] + " bytes [" + dstOffsets[i] + ", " + (dstOffsets[i] + lengths[i]) + ")";
	}

	private String bad(int i, String what) {
		return "malformed scatter list of room " + room + ": piece " + i + " of " + count + ": " + what;
	}

	@Override
	public String toString() {
		StringBuilder b = new StringBuilder("ScatterHeader{room=").append(room).append(", kind=").append(kind)
				.append(", pieces=").append(count);
		for (int i = 0; i < Math.min(count, 4); i++) {
			b.append(i == 0 ? ": " : ", ").append(regions[i]).append('@').append(dstOffsets[i]).append('+')
					.append(lengths[i]);
		}
		return b.append(count > 4 ? ", ...}" : "}").toString();
	}
}
