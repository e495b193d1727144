package io.kvferry.transport.netty.internal.shm;

import java.io.IOException;

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
 * <p>The peer created the file and may shrink it (an {@code ftruncate} through a descriptor it kept, even after the
 * name is gone): the pages past the new end leave this side's mapping too, and a copy into one of them faults
 * ({@code SIGBUS}). So the file's size is checked before every copy, and a fault the JVM reports during the copy is
 * caught; either way {@link #write} throws a {@link ProtocolException} that names the peer, the connection closes with
 * it, and the event loop carries on with its other connections.
 *
 * <p>Event-loop confined (the connection's).
 */
public final class RingSender {

	private final Ring ring;
	private final Runnable resume;
	private final String peer;
	private long free;
	private boolean closed;

	/**
	 * @param ring the mapped ring
	 * @param resume wakes the outbound queue when a slot came back
	 * @param peer names the peer in errors
	 */
	RingSender(Ring ring, Runnable resume, String peer) {
		this.ring = ring;
		this.resume = resume;
		this.peer = peer;
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
	 * @throws ProtocolException when the peer shrank the ring's file: nothing goes through the ring any more
	 */
	public ByteBuf write(ByteBufAllocator alloc, DataHeader frame, DataFrameCursor cursor) {
		if (!hasFreeSlot() || frame.payloadLength() > ring.slotSize()) {
			throw new IllegalStateException("no ring slot for " + frame + " (free: " + Long.toBinaryString(free)
					+ ", slot size " + ring.slotSize() + (closed ? ", closed" : "") + ")");
		}
		checkFile(null);
		int slot = Long.numberOfTrailingZeros(free);
		free &= ~(1L << slot);
		try {
			cursor.copyPayload(ring.slotAddress(slot));
		}
		catch (InternalError e) {
			// How the JVM reports a fault of the copy: the file shrank between the check above and the copy. JDK 17
			// raises it later instead, where the thread next enters the VM (a statement or more after this block), and
			// then the check before the next copy closes the connection.
			checkFile(e);
			closed = true;
			throw new ProtocolException("the shared-memory ring of " + peer + " faulted during a copy: "
					+ e.getMessage(), e);
		}
		return ShmFrames.slotData(alloc, frame, slot);
	}

	private void checkFile(InternalError fault) {
		long size;
		try {
			size = ring.fileSize();
		}
		catch (IOException e) {
			closed = true;
			throw new ProtocolException("the shared-memory ring of " + peer + " cannot be checked: " + e, e);
		}
		if (size < ring.fileBytes()) {
			closed = true;
			throw new ProtocolException("the shared-memory ring of " + peer + " was truncated (its file has " + size
					+ " bytes, expected: " + ring.fileBytes() + ")", fault);
		}
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
