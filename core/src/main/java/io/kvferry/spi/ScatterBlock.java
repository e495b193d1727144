package io.kvferry.spi;

import java.util.Objects;

/**
 * Many small pieces of one room to send as few frames: the receiver's {@link ScatterHeader} and, per piece, where the
 * sender's bytes are. Piece {@code i}'s {@code header.length(i)} bytes are read from {@code srcAddresses[i]} in
 * registered memory, which must stay valid until the room ends: one run there, or, where {@code srcChunks} gives the
 * piece chunks shorter than its length and {@code srcStrides} them apart by more than a chunk, chunks of {@code srcChunks[i]} bytes {@code srcStrides[i]} bytes apart, taken
 * one after another (a piece contiguous on the receiver gathered from a strided source: a head's tokens re-laid from
 * a token-major page into a head-major one). A transport gathers them from there (never copying them onto the heap),
 * or, when it cannot carry scatter frames, sends each as its own {@link DataBlock}.
 *
 * @param header what the receiver is told
 * @param srcAddresses per piece, the address of its first source byte
 * @param srcStrides per piece, bytes between its source chunk starts
 * @param srcChunks per piece, bytes of one source chunk (a divisor of its length; its length when one run)
 * @param gate asked before each frame: once closed, the rest of the block is dropped
 */
public record ScatterBlock(ScatterHeader header, long[] srcAddresses, long[] srcStrides, int[] srcChunks,
		SendGate gate) implements Block {

	public ScatterBlock {
		Objects.requireNonNull(header, "header");
		Objects.requireNonNull(srcAddresses, "srcAddresses");
		Objects.requireNonNull(srcStrides, "srcStrides");
		Objects.requireNonNull(srcChunks, "srcChunks");
		Objects.requireNonNull(gate, "gate");
		if (srcAddresses.length < header.count()) {
			throw new IllegalArgumentException("srcAddresses : " + srcAddresses.length + " addresses for "
					+ header.count() + " pieces");
		}
		if (srcStrides.length < header.count() || srcChunks.length < header.count()) {
			throw new IllegalArgumentException("srcStrides, srcChunks : " + srcStrides.length + " and "
					+ srcChunks.length + " entries for " + header.count() + " pieces");
		}
		for (int i = 0; i < header.count(); i++) {
			int chunk = srcChunks[i];
			int length = header.length(i);
			// A piece of one run is the header's to judge (a rogue sender's malformed list included).
			if (chunk != length && (chunk < 1 || chunk > length || length % chunk != 0 || srcStrides[i] < chunk)) {
				throw new IllegalArgumentException("piece " + i + " : " + length + " bytes in source chunks of "
						+ chunk + " every " + srcStrides[i] + " bytes (expected: chunks dividing the length, apart "
						+ "by at least a chunk)");
			}
		}
	}

	/** Every piece one run in the sender's memory. */
	public ScatterBlock(ScatterHeader header, long[] srcAddresses, SendGate gate) {
		this(header, srcAddresses, new long[header.count()], lengths(header), gate);
	}

	private static int[] lengths(ScatterHeader header) {
		int[] lengths = new int[header.count()];
		for (int i = 0; i < lengths.length; i++) {
			lengths[i] = header.length(i);
		}
		return lengths;
	}

	/** Reads a piece's source: one call per chunk, in order. */
	@FunctionalInterface
	public interface ChunkVisitor {

		/**
		 * @param address the chunk's first source byte
		 * @param length its bytes
		 */
		void chunk(long address, int length);
	}

	/** @return the address of piece {@code i}'s first source byte */
	public long srcAddress(int i) {
		return srcAddresses[Objects.checkIndex(i, header.count())];
	}

	/** @return bytes of one source chunk of piece {@code i}: its length when it is one run */
	public int srcChunk(int i) {
		return srcChunks[Objects.checkIndex(i, header.count())];
	}

	/** @return whether piece {@code i}'s source bytes are one run */
	public boolean isContiguous(int i) {
		return srcChunk(i) == header.length(i) || srcStrides[i] == srcChunks[i];
	}

	/** Hands piece {@code i}'s source to {@code visitor}: one run when contiguous, else chunk by chunk. */
	public void chunks(int i, ChunkVisitor visitor) {
		long address = srcAddress(i);
		int length = header.length(i);
		if (isContiguous(i)) {
			visitor.chunk(address, length);
			return;
		}
		int chunk = srcChunks[i];
		for (int off = 0; off < length; off += chunk) {
			visitor.chunk(address, chunk);
			address += srcStrides[i];
		}
	}

	/** @return piece {@code i} as a data block of its own, behind the same gate (strided when its source is) */
	public DataBlock piece(int i) {
		if (isContiguous(i)) {
			return new DataBlock(header.piece(i), srcAddress(i), 0, gate);
		}
		int chunk = srcChunks[i];
		return new DataBlock(new DataHeader(header.room(), header.kind(), header.region(i), header.dstOffset(i), chunk,
				chunk, header.length(i) / chunk), srcAddress(i), srcStrides[i], gate);
	}

	@Override
	public long room() {
		return header.room();
	}

	/** @return payload bytes of all pieces */
	@Override
	public long payloadLength() {
		return header.payloadLength();
	}

	@Override
	public boolean equals(Object o) {
		return this == o;
	}

	@Override
	public int hashCode() {
		return System.identityHashCode(this);
	}

	@Override
	public String toString() {
		return "ScatterBlock{" + header + '}';
	}
}
