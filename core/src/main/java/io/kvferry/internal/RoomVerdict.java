package io.kvferry.internal;

import java.time.Duration;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;

import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.RoomTrace;
import io.kvferry.spi.KVMessage;
import reactor.core.scheduler.Scheduler;

/**
 * A decode room's verdict: what each prefill rank asked for the room reported, and when the room is done. It comes
 * from decode's own ledger alone, once every rank that writes the room reported Success with exactly the bytes that
 * landed; the engine's own check, when it gave one, runs last.
 *
 * <p>Its state is guarded by the room's monitor, the same one that guards what the room asked: the room calls it with
 * that monitor held, and a rank's settled Success takes it here. No user code runs under it.
 */
final class RoomVerdict {

	private final Room room;
	private final Scheduler callbacks;
	// The room's ledger, read under the room's monitor; null until the room asked its ranks.
	private final Supplier<GrantLedger> ledger;
	// The engine's own check of the landed bytes, run before Success; null for none.
	private volatile Supplier<String> check;
	// Guarded by room.
	private final Set<DecodeSession> finished = new HashSet<>();
	private final Set<DecodeSession> succeeded = new HashSet<>();
	private final Set<Integer> responders = new HashSet<>();

	RoomVerdict(Room room, Scheduler callbacks, Supplier<GrantLedger> ledger) {
		this.room = room;
		this.callbacks = callbacks;
		this.ledger = ledger;
	}

	void verify(Supplier<String> check) {
		this.check = Objects.requireNonNull(check, "check");
	}

	/**
	 * A report on the room from {@code s}, one of the ranks the room asked; under the room's monitor.
	 *
	 * @param required how many prefill ranks must report Success before the room is judged
	 */
	void reported(DecodeSession s, KVMessage.Status status, int required) {
		long id = room.id;
		if (status.status() != KVPoll.SUCCESS) {
			if (s.connection.reportsFollowBytes()) {
				// The report follows everything the rank sent for the room.
				finished.add(s);
			}
			if (status.status() == KVPoll.FAILED) {
				// The rank says why in its code, never in words: overload with its hint, a drain, a lease that
				// expired, a requeue; a code without a category is the rank's failure.
				FailureCause cause = status.cause();
				if (cause == FailureCause.OVERLOAD) {
					room.retryAfter(Duration.ofMillis(status.retryAfterMillis()));
				}
				room.fail(cause, "Prefill rank " + s.endpoint + " failed room " + id + ": " + status.reason(), true);
			}
			return;
		}
		if (room.isTerminal()) {
			// Nothing to judge, and no book of the room's bytes to open on the connection after the room forgot it.
			return;
		}
		if (!succeeded.add(s)) {
			room.fail(FailureCause.PROTOCOL, "prefill rank " + s.endpoint + " reported Success for room " + id
					+ " twice");
			return;
		}
		s.connection.settle(id, status, mismatch -> rankDone(s, status, mismatch, required));
	}

	/** @return whether {@code s} sends nothing more for the room; under the room's monitor */
	boolean finished(DecodeSession s) {
		return finished.contains(s);
	}

	/** A rank's Success, once every byte it sent landed: {@code mismatch} says whether they are what it reported. */
	private void rankDone(DecodeSession s, KVMessage.Status status, String mismatch, int required) {
		synchronized (room) {
			if (room.isTerminal()) {
				return;
			}
			// The rank sends nothing more for the room.
			finished.add(s);
			if (mismatch != null) {
				room.fail(FailureCause.INCOMPLETE, mismatch);
				return;
			}
			room.trace.event(RoomTrace.Event.RANK_DONE, status.bytes());
			responders.add(status.prefillRank());
			if (responders.size() >= required) {
				// Every rank says it is done; decode's own ledger decides whether the room is.
				GrantLedger l = ledger.get();
				String missing = l == null ? "decode had not asked for any page" : l.incomplete();
				if (missing != null) {
					room.fail(FailureCause.INCOMPLETE, "room " + room.id + " is incomplete although its prefill ranks "
							+ "reported Success: " + missing);
					return;
				}
				Supplier<String> c = check;
				if (c == null) {
					room.advance(KVPoll.SUCCESS);
				}
				else {
					// The engine's code runs on its own scheduler, never under the room's monitor.
					callbacks.schedule(() -> verdict(c));
				}
			}
		}
	}

	/** The engine's check of a room whose every byte landed: Success, or a mismatch naming what differs. */
	private void verdict(Supplier<String> c) {
		String mismatch;
		try {
			mismatch = c.get();
		}
		catch (RuntimeException e) {
			mismatch = "the engine's check threw " + e;
		}
		if (mismatch == null) {
			room.advance(KVPoll.SUCCESS);
		}
		else {
			room.fail(FailureCause.MISMATCH, "room " + room.id + " landed whole but is not what the engine expected: "
					+ mismatch);
		}
	}
}
