package io.kvferry.test.rogue;

import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.ScatterHeader;

/**
 * One connection of a rogue peer, as its transport lets it write: any message, any data header with any payload from
 * the rogue's memory, and, where the transport carries bytes, frames no peer writes and silence. Methods may be called
 * from any thread; what one link writes reaches the other side in order.
 */
public interface RogueLink {

	/** @return a short name for messages */
	String id();

	/** Writes a control message. */
	void send(KVMessage message);

	/**
	 * Writes a data frame: {@code header} and {@code header.payloadLength()} bytes, chunk {@code i} read from
	 * {@code srcAddress + i × srcStride} (the rogue's own memory).
	 */
	void data(DataHeader header, long srcAddress, long srcStride);

	/**
	 * Writes many pieces of one room: a {@code DATA_SCATTER} frame where the transport carries them, else one data frame
	 * per piece. Piece {@code i} is read from {@code srcAddresses[i]}.
	 */
	void scatter(ScatterHeader header, long[] srcAddresses);

	/**
	 * Writes a frame no peer writes.
	 *
	 * @param room the room a frame that names one names
	 * @return false when this transport carries well-formed messages only (nothing was written)
	 */
	boolean forge(Forgery forgery, long room);

	/**
	 * Stops answering the peer's heartbeats and sending any of its own, as a hung process does.
	 *
	 * @return false when this transport has no heartbeats (nothing changed)
	 */
	boolean silence();

	/** Closes the connection. */
	void close();

	/** @return whether the connection is open */
	boolean isOpen();
}
