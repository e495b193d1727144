package io.kvferry.internal;

import io.kvferry.FailureCause;
import io.kvferry.KVTransferException;
import io.kvferry.spi.CloseReason;

/** How the engine words and files the failures it meets: one place, so that every class says them alike. */
final class Failures {

	private Failures() {
	}

	/** @return the reason text of a failure, for a room's record */
	static String describe(Throwable t) {
		if (t instanceof KVTransferException k) {
			return k.reason();
		}
		String m = t.getMessage();
		return m == null ? t.getClass().getSimpleName() : m;
	}

	/** @return the cause of a room lost with its connection */
	static FailureCause lostWith(CloseReason reason) {
		return reason.kind() == CloseReason.Kind.LOCAL || reason.kind() == CloseReason.Kind.DISPOSED
				? FailureCause.CLOSED : FailureCause.CONNECTION_LOST;
	}
}
