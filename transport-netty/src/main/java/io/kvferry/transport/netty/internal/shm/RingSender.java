package io.kvferry.transport.netty.internal.shm;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.transport.netty.internal.DataFrameCursor;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * Prefill's side of a ring: which slots are free, and the copy of a frame's payload from registered memory into one.
 * A slot is taken when its frame is written and free again when decode's {@code SHM_CREDIT} for it arrives; with no
 * slot free the connection's outbound queue waits for a credit, as it waits for writability.
 *
 * <p>Event-loop confined (the connection's).
 */
public final class RingSender {

	private final Ring ring;
	private final Runnable resume;
	private long free;
	private boolean closed;

	RingSender(Ring ring, Runnable resume) {
		this.ring = ring;
		this.resume = resume;
		this.free = ring.slots() == 64 ? -1L : (1L << ring.slots()) - 1;
	}

	/** @return the largest payload one frame through the ring may have */
	public int slotSize() {
		return ring.slotSize();
	}

	/** @return whether a frame can be written through the ring now */
	public boolean hasFreeSlot() {
		return !closed && free != 0;
	}

	/**
	 * Copies the payload of the frame {@code cursor} produced last into a free slot.
	 *
	 * @param frame the header {@link DataFrameCursor#next()} returned, at most {@link #slotSize()} payload bytes
	 * @return the {@code DATA_SHM} frame that tells decode where it is; the caller owns the buffer
	 * @throws IllegalStateException when no slot is free or the payload does not fit
	 */
	public ByteBuf write(ByteBufAllocator alloc, DataHeader frame, DataFrameCursor cursor) {
		if (!hasFreeSlot() || frame.payloadLength() > ring.slotSize()) {
			throw new IllegalStateException("no ring slot for " + frame + " (free: " + Long.toBinaryString(free)
					+ ", slot size " + ring.slotSize() + (closed ? ", closed" : "") + ")");
		}
		int slot = Long.numberOfTrailingZeros(free);
		free &= ~(1L << slot);
		cursor.copyPayload(ring.slotAddress(slot));
		return ShmFrames.slotData(alloc, frame, slot);
	}

	/**
	 * Decode handed {@code slot} back.
	 *
	 * @throws ProtocolException when it is not a slot of the ring or was not taken
	 */
	void credit(int slot) {
		if (slot < 0 || slot >= ring.slots() || (free & (1L << slot)) != 0) {
			throw new ProtocolException("SHM_CREDIT slot : " + slot + " (expected: a slot in use, 0.."
					+ (ring.slots() - 1) + ")");
		}
		free |= 1L << slot;
		resume.run();
	}

	/** No frame goes through the ring any more (the connection closed); the ring is unmapped after this. */
	void close() {
		closed = true;
	}
}
