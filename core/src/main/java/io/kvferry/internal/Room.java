package io.kvferry.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Consumer;

import io.kvferry.FailureCause;
import io.kvferry.KVOverloadException;
import io.kvferry.KVPoll;
import io.kvferry.KVRoom;
import io.kvferry.KVTransferException;
import io.kvferry.RoomPath;
import io.kvferry.RoomPhases;
import io.kvferry.RoomTrace;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * One room's state on one manager, and what its sender or receiver offers whatever the role ({@link KVRoom}). State
 * changes go through {@link RoomTable#update}, which applies SGLang's rules under this object's monitor. The room
 * latches its first terminal state: its sender or receiver reports that one, whatever comes after. Its states replay
 * the latest one to late subscribers; since states only move forward a room emits at most five values, so a slow
 * subscriber holds at most five.
 */
class Room implements KVRoom {

	final long id;
	// The table the room's states change in; its callback scheduler calls the room's subscribers.
	private final RoomTable<?> table;
	// When the room passed each mark of its phases (its first state among them), and its path.
	final RoomClock clock;
	// Set once, when the table admitted the room: only such rooms count towards a drain.
	volatile boolean admitted;
	// The room's trace on this manager; ended once, after the terminal state was published.
	volatile RoomTrace trace = RoomTrace.NONE;
	// Emitted under this room's monitor, which serializes emissions; subscribers only ever see it through
	// states(Scheduler), so no subscriber code runs there.
	private final Sinks.Many<KVPoll> states = Sinks.unsafe().many().replay().latest();

	// Written under this object's monitor; volatile so that the transport's threads read it without taking that
	// monitor (a room's byte acceptance asks whether it is live on every frame).
	private volatile KVPoll state;
	// Guarded by this.
	private String reason = "";
	private FailureCause cause;
	private boolean fromAnotherRank;
	// The retry hint of an overload refusal, set before the room fails as overloaded.
	private Duration retryAfter = Duration.ZERO;
	// When the current state began, on the table's deadline clock; written under this object's monitor.
	private volatile long stateSince;
	// The one timer armed for the room's state timeout, the earliest any state asked for. Swapped without the room's
	// monitor, as a room's first byte moves it on a transport thread, which must never wait for whoever holds the room.
	private volatile Timeout timeout;
	private static final AtomicReferenceFieldUpdater<Room, Timeout> TIMEOUT =
			AtomicReferenceFieldUpdater.newUpdater(Room.class, Timeout.class, "timeout");

	Room(long id, RoomTable<?> table) {
		this(id, table, false);
	}

	/** @param decode whether this is a receiver's room (its phases are decode's) */
	Room(long id, RoomTable<?> table, boolean decode) {
		this.id = id;
		this.table = table;
		this.clock = new RoomClock(decode);
	}

	@Override
	public final long room() {
		return id;
	}

	@Override
	public final KVPoll poll() {
		return state;
	}

	@Override
	public final Flux<KVPoll> states() {
		return states(table.callbacks());
	}

	@Override
	public final Mono<Void> completion() {
		// A failed room errors only once its memory may be reused (released()); the exception is made then too, so
		// that it tells what the room's memory holds by then.
		Scheduler callbacks = table.callbacks();
		return terminal(callbacks).flatMap(s -> s == KVPoll.SUCCESS ? Mono.<Void>empty()
				: released().then(Mono.<Void>error(this::failure)).publishOn(callbacks));
	}

	@Override
	public final void abort(String reason) {
		fail(FailureCause.ABORTED, abortReason(reason));
	}

	/**
	 * Moves the room forward in its table ({@link RoomTable#advance}): never to Failed.
	 *
	 * @return whether the state changed
	 */
	final boolean advance(KVPoll next) {
		return table.advanceRoom(this, next);
	}

	/**
	 * Fails the room for a reason found on this rank ({@link RoomTable#fail}); nothing once it ended.
	 *
	 * @return whether the state changed
	 */
	final boolean fail(FailureCause cause, String reason) {
		return fail(cause, reason, false);
	}

	/**
	 * Fails the room ({@link RoomTable#fail}); nothing once it ended.
	 *
	 * @param remote whether another rank reported it
	 * @return whether the state changed
	 */
	final boolean fail(FailureCause cause, String reason, boolean remote) {
		return table.failRoom(this, cause, reason, remote);
	}

	/**
	 * @return completes once a failed room's memory may be reused: nothing of it is read or written any more; at once
	 *         unless the role waits for its peers
	 */
	Mono<Void> released() {
		return Mono.empty();
	}

	/** @return the reason recorded for a local abort: it always says it was an abort */
	static String abortReason(String reason) {
		String r = reason == null || reason.isBlank() ? "no reason given" : reason;
		return r.startsWith("Aborted") ? r : "Aborted: " + r;
	}

	/** @return the current state, or null before the first update */
	KVPoll state() {
		return state;
	}

	synchronized String reason() {
		return reason;
	}

	/** @return why the room failed, or null unless it did */
	synchronized FailureCause cause() {
		return cause;
	}

	/** @return whether the room failed because a peer said so */
	synchronized boolean isRemoteFailure() {
		return state == KVPoll.FAILED && fromAnotherRank;
	}

	/** @return how the room's bytes travel, without the room's monitor; unknown until its peers are connected */
	@Override
	public final RoomPath path() {
		return clock.path();
	}

	/** @return where the room's time went, without the room's monitor; {@link RoomPhases#NONE} until it ended */
	@Override
	public final RoomPhases phases() {
		return clock.phases();
	}

	/** @return when the room reached its first state ({@link System#nanoTime()}) */
	long firstStateNanos() {
		return clock.openedNanos();
	}

	boolean isTerminal() {
		KVPoll s = state;
		return s != null && s.isTerminal();
	}

	/** A room that may still send or receive bytes: known and not terminal. */
	boolean isLive() {
		KVPoll s = state;
		return s != null && !s.isTerminal();
	}

	/**
	 * @param callbacks where the subscriber is called
	 * @return the room's states: the current one first, then each change; completes after the terminal one
	 */
	Flux<KVPoll> states(Scheduler callbacks) {
		return states.asFlux().publishOn(callbacks);
	}

	/**
	 * @param callbacks where the subscriber is called
	 * @return the room's terminal state, once it is reached: one hand-off to {@code callbacks} per room, where
	 *         {@code states(callbacks).last()} would wake a callback worker for every state on the way
	 */
	Mono<KVPoll> terminal(Scheduler callbacks) {
		// The states end with the terminal one. Not last(): it discards each earlier state through the subscriber
		// chain's context, looked up anew per state (a few percent of an event loop's time with rooms of many ranks);
		// filter looks it up once.
		return states.asFlux().filter(KVPoll::isTerminal).next().publishOn(callbacks);
	}

	synchronized KVTransferException failure() {
		String why = reason.isEmpty() ? "Failed due to an unknown reason" : reason;
		if (cause == FailureCause.OVERLOAD) {
			return new KVOverloadException(id, why, fromAnotherRank, retryAfter);
		}
		return new KVTransferException(id, cause == null ? FailureCause.OTHER : cause, why, fromAnotherRank);
	}

	/**
	 * @return the last failure of the step the room waits on in its current state (e.g. a look-up being retried), for
	 *         the reason of a timeout; null when none is known. Any thread, without the room's monitor.
	 */
	String stalledBy() {
		return null;
	}

	/** Sets the retry hint the room's failure carries should it fail as overloaded; before it fails. */
	synchronized void retryAfter(Duration hint) {
		retryAfter = hint;
	}

	/**
	 * Applies an update under the room's monitor.
	 *
	 * @return the previous state and the new one, or null when the update changed nothing
	 */
	synchronized KVPoll[] apply(KVPoll update, FailureCause failure, String why, boolean remote, long clockNow,
			Consumer<KVPoll> beforeTerminal) {
		if (state != null && state.isTerminal()) {
			// Latched: the first terminal state is the one this room's sender or receiver reports.
			return null;
		}
		KVPoll next = RoomTable.merge(state, update);
		if (next == null || next == state) {
			return null;
		}
		KVPoll previous = state;
		if (previous == null) {
			clock.opened(RoomClock.now());
		}
		if (next == KVPoll.FAILED) {
			cause = failure;
			reason = why;
			fromAnotherRank = remote;
		}
		if (next.isTerminal()) {
			// Whoever sees the terminal state, even without this monitor (the state is volatile), must find the room
			// already forgotten and counted, and its phases fixed: the state is written after.
			clock.end(RoomClock.now(), next == KVPoll.SUCCESS);
			beforeTerminal.accept(next);
		}
		stateSince = clockNow;
		state = next;
		states.tryEmitNext(next);
		if (next.isTerminal()) {
			states.tryEmitComplete();
		}
		return new KVPoll[] { previous, next };
	}

	/**
	 * Called under this room's monitor as it ends: its failure's fields are set, its state not yet.
	 *
	 * @param terminal the state the room ends with
	 * @return how it ended, for an engine that opens it only later; null when no engine may open it again
	 */
	RoomTable.Ended endedUnopened(KVPoll terminal) {
		return null;
	}

	/** @return the room's failure as the table keeps it once the room is forgotten; under this room's monitor */
	final RoomTable.Ended endedAs() {
		return new RoomTable.Ended(cause == null ? FailureCause.OTHER : cause, reason, fromAnotherRank, retryAfter);
	}

	/** @return when the current state began, on the clock the table passed to {@link #apply} */
	long stateSince() {
		return stateSince;
	}

	/**
	 * A timer armed for the room's state timeout. A room keeps at most one: moving to a state whose limit ends later
	 * than the armed one leaves it be (it re-arms itself when it fires early), so a room whose limits are alike
	 * schedules one timer in its life instead of one per state.
	 */
	static final class Timeout {
		final long deadline;
		// Installed before its task is scheduled, so that a task that fires at once finds it: either side may come
		// first, and whichever sees the other disposes the task.
		private volatile Disposable task;
		private volatile boolean cancelled;

		Timeout(long deadline) {
			this.deadline = deadline;
		}

		/** Hands over the scheduled task, disposed at once when the timeout was cancelled meanwhile. */
		void scheduled(Disposable t) {
			task = t;
			if (cancelled) {
				t.dispose();
			}
		}

		void cancel() {
			cancelled = true;
			Disposable t = task;
			if (t != null) {
				t.dispose();
			}
		}
	}

	/**
	 * @param deadline when the current state's limit ends, on the table's deadline clock
	 * @return a new timeout to {@link #install} and then schedule, or null when one that fires no later is armed
	 */
	Timeout needsTimeout(long deadline) {
		Timeout armed = timeout;
		return armed != null && armed.deadline <= deadline ? null : new Timeout(deadline);
	}

	/**
	 * Installs a timeout, before its task is scheduled, unless one firing no later got there first; cancels the one it
	 * replaces. A timeout installed after the room ended is cancelled at once.
	 *
	 * @return whether it was installed (then schedule it), false when another fires no later
	 */
	boolean install(Timeout next) {
		for (;;) {
			Timeout armed = timeout;
			if (armed != null && armed.deadline <= next.deadline) {
				return false;
			}
			if (TIMEOUT.compareAndSet(this, armed, next)) {
				if (armed != null) {
					armed.cancel();
				}
				break;
			}
		}
		if (isTerminal()) {
			clearTimeout();
		}
		return true;
	}

	/** @return whether {@code fired} was still the room's timeout (it is taken off); false when another replaced it */
	boolean fired(Timeout fired) {
		return TIMEOUT.compareAndSet(this, fired, null);
	}

	/** Cancels the room's timeout, if any: the room ended. */
	void clearTimeout() {
		Timeout armed = TIMEOUT.getAndSet(this, null);
		if (armed != null) {
			armed.cancel();
		}
	}
}
