package io.kvferry.internal;

import io.kvferry.FailureCause;
import io.kvferry.KVFerryException;

/**
 * Decode refused a prefill rank before asking it for the room: it showed an incarnation that another one replaced
 * ({@link FailureCause#PEER_RESTARTED}), or its circuit breaker is open ({@link FailureCause#PEER_UNAVAILABLE}).
 */
final class PeerRefusedException extends KVFerryException {

	private static final long serialVersionUID = 1L;

	final FailureCause cause;

	PeerRefusedException(FailureCause cause, String message) {
		super(message);
		this.cause = cause;
	}
}
