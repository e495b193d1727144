package io.kvferry;

/**
 * A room failed: the transfer of its KV cache did not complete. Carries the room, the reason and whether the failure
 * was reported by another rank (the peer or the bootstrap server) rather than detected here.
 */
public class KVTransferException extends KVFerryException {

	private static final long serialVersionUID = 1L;

	private final long room;
	private final String reason;
	private final boolean fromAnotherRank;

	public KVTransferException(long room, String reason, boolean fromAnotherRank) {
		super("KVTransferError(bootstrap_room=" + room + "): " + reason);
		this.room = room;
		this.reason = reason;
		this.fromAnotherRank = fromAnotherRank;
	}

	public long room() {
		return room;
	}

	public String reason() {
		return reason;
	}

	/** @return true when the failure was reported by a peer rather than detected on this rank */
	public boolean isFromAnotherRank() {
		return fromAnotherRank;
	}
}
