package io.kvferry;

import java.util.Objects;

/**
 * A room failed: the transfer of its KV cache did not complete. Carries the room, a typed cause, the reason and
 * whether the failure was reported by another rank (the peer or the bootstrap server) rather than detected here.
 * Stackless: the room and the reason say where it came from, a stack trace of the thread that published it does not.
 */
public class KVTransferException extends KVFerryException {

	private static final long serialVersionUID = 1L;

	private final long room;
	private final FailureCause cause;
	private final String reason;
	private final boolean fromAnotherRank;

	public KVTransferException(long room, FailureCause cause, String reason, boolean fromAnotherRank) {
		super("KVTransferError(bootstrap_room=" + room + "): " + reason);
		this.room = room;
		this.cause = Objects.requireNonNull(cause, "cause");
		this.reason = reason;
		this.fromAnotherRank = fromAnotherRank;
	}

	public long room() {
		return room;
	}

	/** @return why the room failed, as a category */
	public FailureCause failureCause() {
		return cause;
	}

	public String reason() {
		return reason;
	}

	/** @return true when the failure was reported by a peer rather than detected on this rank */
	public boolean isFromAnotherRank() {
		return fromAnotherRank;
	}

	@Override
	public synchronized Throwable fillInStackTrace() {
		return this;
	}
}
