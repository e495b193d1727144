package io.kvferry.internal;

import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendGate;

/** Where a plan's blocks go: one destination's connection, in order, behind the room's gate. */
interface BlockOutlet {

	void send(DataBlock block);

	/**
	 * Sends {@code length} contiguous bytes at {@code srcAddress} to byte {@code dstOffset} of a KV region: the block
	 * a page-size-1 room sends once per token and layer buffer, given by its fields so that an outlet that groups
	 * small pieces takes them without a block object each.
	 */
	default void sendKv(long room, int region, long dstOffset, int length, long srcAddress) {
		send(new DataBlock(new DataHeader(room, RegionKind.KV, region, dstOffset, length, 0, 1), srcAddress, 0, gate()));
	}

	/** @return the gate the room's blocks are sent behind */
	SendGate gate();
}
