package io.kvferry.spi;

import java.util.Objects;

/**
 * Many small pieces of one room to send as few frames: the receiver's {@link ScatterHeader} and, per piece, where the
 * sender's bytes are. Piece {@code i}'s {@code header.length(i)} bytes are read from {@code srcAddresses[i]} in
 * registered memory, which must stay valid until the room ends. A transport gathers them from there (never copying
 * them onto the heap), or, when it cannot carry scatter frames, sends each as its own {@link DataBlock}.
 *
 * @param header what the receiver is told
 * @param srcAddresses per piece, the address of its first source byte
 * @param gate asked before each frame: once closed, the rest of the block is dropped
 */
public record ScatterBlock(ScatterHeader header, long[] srcAddresses, SendGate gate) implements Block {

	public ScatterBlock {
		Objects.requireNonNull(header, "header");
		Objects.requireNonNull(srcAddresses, "srcAddresses");
		Objects.requireNonNull(gate, "gate");
		if (srcAddresses.length < header.count()) {
			throw new IllegalArgumentException("srcAddresses : " + srcAddresses.length + " addresses for "
					+ header.count() + " pieces");
		}
	}

	/** @return the address of piece {@code i}'s first source byte */
	public long srcAddress(int i) {
		return srcAddresses[Objects.checkIndex(i, header.count())];
	}

	/** @return piece {@code i} as a data block of its own, behind the same gate */
	public DataBlock piece(int i) {
		return new DataBlock(header.piece(i), srcAddress(i), 0, gate);
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
