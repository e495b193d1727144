package io.kvferry;

import java.util.Objects;

/**
 * A room failed: the transfer of its KV cache did not complete. Carries the room, a typed cause, the reason and
 * whether the failure was reported by another rank (the peer or the bootstrap server) rather than detected here.
 * Stackless: the room and the reason say where it came from, a stack trace of the thread that published it does not.
 *
 * <p>On decode, a failed room's exception also says which destination pages landed whole ({@link #landedPages()}),
 * so that the engine recomputes only the rest.
 */
public class KVTransferException extends KVFerryException {

	private static final long serialVersionUID = 1L;

	private final long room;
	private final FailureCause cause;
	private final String reason;
	private final boolean fromAnotherRank;
	private final LandedPages landedPages;

	/** A failure without a record of landed pages ({@link LandedPages#NONE}): prefill's side, or no room's. */
	public KVTransferException(long room, FailureCause cause, String reason, boolean fromAnotherRank) {
		this(room, cause, reason, fromAnotherRank, LandedPages.NONE);
	}

	/**
	 * A failure with decode's record of the room's landed pages.
	 *
	 * @param room the room
	 * @param cause why, as a category
	 * @param reason why, in words
	 * @param fromAnotherRank whether another rank reported it
	 * @param landedPages the destination pages that landed whole, or {@link LandedPages#NONE}
	 */
	public KVTransferException(long room, FailureCause cause, String reason, boolean fromAnotherRank,
			LandedPages landedPages) {
		super("KVTransferError(bootstrap_room=" + room + "): " + reason);
		this.room = room;
		this.cause = Objects.requireNonNull(cause, "cause");
		this.reason = reason;
		this.fromAnotherRank = fromAnotherRank;
		this.landedPages = Objects.requireNonNull(landedPages, "landedPages");
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

	/**
	 * The destination pages that landed whole before the room failed, from decode's own ledger, once no byte could
	 * land any more (the receiver's completion errors only then). Prefill's side keeps no such record:
	 * {@link LandedPages#NONE}.
	 *
	 * @return which pages landed whole, per room and per layer
	 */
	public LandedPages landedPages() {
		return landedPages;
	}

	@Override
	public synchronized Throwable fillInStackTrace() {
		return this;
	}
}
