package io.kvferry.spi;

/**
 * Bytes of one room that a sender hands a {@link KVConnection} to carry from registered memory: one strided run of
 * chunks ({@link DataBlock}) or many small pieces gathered in place ({@link ScatterBlock}). Both go one way through a
 * connection (one send, one queue, one gate asked before each frame, one listener told at the end): only the frames
 * they are cut into differ.
 */
public sealed interface Block permits DataBlock, ScatterBlock {

	/** @return the room the bytes belong to */
	long room();

	/** @return asked before each frame: once closed, the rest of the block is dropped */
	SendGate gate();

	/** @return the payload bytes the block carries */
	long payloadLength();
}
