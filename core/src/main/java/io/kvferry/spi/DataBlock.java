package io.kvferry.spi;

import java.util.Objects;

/**
 * A data frame to send: its header and where the sender's bytes are. Chunk {@code i} is read from
 * {@code srcAddress + i × srcStride} in registered memory, which must stay valid until the room ends.
 *
 * @param header what the receiver is told
 * @param srcAddress address of the first source chunk
 * @param srcStride bytes between source chunk starts (ignored when one chunk)
 * @param gate asked before each frame: once closed, the rest of the block is dropped
 */
public record DataBlock(DataHeader header, long srcAddress, long srcStride, SendGate gate) implements Block {

	public DataBlock {
		Objects.requireNonNull(header, "header");
		Objects.requireNonNull(gate, "gate");
	}

	/** A block that is always sent (tests, tools). */
	public DataBlock(DataHeader header, long srcAddress, long srcStride) {
		this(header, srcAddress, srcStride, SendGate.OPEN);
	}

	@Override
	public long room() {
		return header.room();
	}

	@Override
	public long payloadLength() {
		return header.payloadLength();
	}

	/** @return whether the source bytes are one contiguous run */
	public boolean isContiguous() {
		return header.count() == 1 || srcStride == header.chunkLen();
	}
}
