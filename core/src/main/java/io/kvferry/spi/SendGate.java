package io.kvferry.spi;

import io.kvferry.RoomPriority;

/**
 * Whether a room may still send: the transport asks just before writing each frame of a data block, and before a
 * message sent with this gate, and drops what it may no longer write. A room aborted while its blocks wait in a queue
 * therefore sends nothing more, and a message that reports the room's data complete (a Success) never outruns the
 * data it reports. Called on the transport's thread: quick, lock-free, never blocking.
 */
@FunctionalInterface
public interface SendGate {

	/** Always open: control messages that report nothing about a room's data. */
	SendGate OPEN = () -> true;

	/** @return whether what this gate guards may still be written */
	boolean isOpen();

	/**
	 * @return how what this gate guards queues behind other rooms' data: a transport may write what a
	 *         {@link RoomPriority#HIGH} gate guards ahead of the NORMAL items already queued, keeping the order among
	 *         each priority's items; fixed before anything behind the gate is sent
	 */
	default RoomPriority priority() {
		return RoomPriority.NORMAL;
	}
}
