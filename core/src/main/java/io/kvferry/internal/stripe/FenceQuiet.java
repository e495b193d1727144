package io.kvferry.internal.stripe;

import java.util.BitSet;

/**
 * A failed room's abort on one dialled connection: the stripes that have not yet said they carry nothing more of the
 * room. The room's pages are released only once no stripe of any rank that may write them owes that answer.
 */
final class FenceQuiet {

	final Runnable done;
	// Guarded by this.
	private final BitSet owing;

	FenceQuiet(int width, Runnable done) {
		this.done = done;
		this.owing = new BitSet(width);
		owing.set(0, width);
	}

	/** @return whether this answer was the last one owed (then the caller runs {@link #done}, once) */
	synchronized boolean answered(int stripe) {
		if (owing.isEmpty() || !owing.get(stripe)) {
			return false;
		}
		owing.clear(stripe);
		return owing.isEmpty();
	}

	/** @return a stripe that still owes its answer, or -1 */
	synchronized int owing() {
		return owing.nextSetBit(0);
	}
}
