package io.kvferry.internal;

import io.kvferry.spi.DataBlock;
import io.kvferry.spi.SendGate;

/** Where a plan's blocks go: one destination's connection, in order, behind the room's gate. */
interface BlockOutlet {

	void send(DataBlock block);

	/** @return the gate the room's blocks are sent behind */
	SendGate gate();
}
