package io.kvferry.internal;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;

import io.kvferry.DisaggregationMode;
import io.kvferry.FailureCause;
import io.kvferry.KVMetricsRecorder;
import io.kvferry.KVPoll;
import io.kvferry.KVStatusEvent;
import io.kvferry.RoomPath;
import io.kvferry.RoomPhases;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * A manager's rooms: SGLang's state rules in one place, a timeout for every non-terminal state, and the manager-wide
 * hot event stream.
 *
 * @param <R> the engine's room type
 */
final class RoomTable<R extends Room> {

	private static final Logger log = LoggerFactory.getLogger(RoomTable.class);
	// Rooms that ended recently: late messages for them are ignored instead of re-creating state nobody clears.
	private static final int TOMBSTONES = 1 << 16;
	// A timer whose now() is this close to the wall clock tells the wall clock.
	private static final long WALL_CLOCK_SLACK_MILLIS = 60_000;

	private final ConcurrentHashMap<Long, R> rooms = new ConcurrentHashMap<>();
	// Value: why the room ended before an engine could open it (an abort that came first, or a request the engine had
	// not claimed yet), or RAN for a room that nobody may open again.
	private final Map<Long, Ended> tombstones = new LinkedHashMap<>(256, 0.75f, false) {
		private static final long serialVersionUID = 1L;

		@Override
		protected boolean removeEldestEntry(Map.Entry<Long, Ended> eldest) {
			return size() > TOMBSTONES;
		}
	};
	private final HotStream<KVStatusEvent> events;
	private final String name;
	private final Scheduler timer;
	// What state deadlines are measured on, in nanoseconds: the timer's own clock when it keeps time of its own (a
	// virtual-time scheduler), else System.nanoTime. Reactor's schedulers tell the wall clock, which a clock step moves:
	// a step forward would fail rooms early.
	private final LongSupplier clock;
	private final Duration[] timeouts;
	private final BiConsumer<R, KVPoll> onEnding;
	private final Consumer<R> onTerminal;
	// Admitted rooms whose end was not fully handled yet (terminal state published and the engine's cleanup done).
	private final AtomicInteger unfinished = new AtomicInteger();
	private final Sinks.Empty<Void> drained = Sinks.empty();
	// Guarded by tombstones (so that an admission and the start of a drain never cross); read without it.
	private volatile String drainReason;
	// Why new rooms are refused for a while (the regions are being swapped), or null; guarded and read as drainReason.
	private volatile String pauseReason;
	private final Scheduler callbacks;
	private KVMetricsRecorder recorder = KVMetricsRecorder.NONE;
	private DisaggregationMode mode;

	/**
	 * @param name manager name for log lines
	 * @param timer runs state timeouts
	 * @param callbacks where subscribers of {@link #events()} are called
	 * @param bootstrapTimeout limit for Bootstrapping
	 * @param waitingTimeout limit for WaitingForInput
	 * @param transferTimeout limit for Transferring
	 * @param eventBufferSize per-subscriber buffer of {@link #events()}
	 * @param onEnding bookkeeping, called once per room as it ends with its terminal state, before anyone can see that
	 *        state (so that whoever sees it also finds it counted); runs under the room's monitor: quick and lock-free
	 * @param onTerminal engine cleanup, called once per room after it ended
	 */
	RoomTable(String name, Scheduler timer, Scheduler callbacks, Duration bootstrapTimeout, Duration waitingTimeout,
			Duration transferTimeout, int eventBufferSize, BiConsumer<R, KVPoll> onEnding, Consumer<R> onTerminal) {
		this.name = name;
		this.timer = timer;
		this.clock = Math.abs(timer.now(TimeUnit.MILLISECONDS) - System.currentTimeMillis()) < WALL_CLOCK_SLACK_MILLIS
				? System::nanoTime : () -> timer.now(TimeUnit.NANOSECONDS);
		this.timeouts = new Duration[] { null, bootstrapTimeout, waitingTimeout, transferTimeout, null };
		this.events = new HotStream<>(callbacks, eventBufferSize,
				dropped -> log.debug("[{}] slow subscriber dropped {}", name, dropped));
		this.onEnding = onEnding;
		this.onTerminal = onTerminal;
		this.callbacks = callbacks;
	}

	/** Tells {@code recorder}, on the callback scheduler, of each room this table opens and ends; before any room. */
	void recordTo(KVMetricsRecorder recorder, DisaggregationMode mode) {
		this.recorder = recorder;
		this.mode = mode;
	}

	/**
	 * SGLang's update rule: an unknown room takes any state but Failed (a cleared room never comes back); Failed
	 * overrides any state, even Success; otherwise a state only moves forward.
	 *
	 * @param current the room's state, null when unknown
	 * @param update the proposed state
	 * @return the resulting state, or null when the update is ignored
	 */
	static KVPoll merge(KVPoll current, KVPoll update) {
		if (current == null) {
			return update == KVPoll.FAILED ? null : update;
		}
		if (update == KVPoll.FAILED) {
			return KVPoll.FAILED;
		}
		return update.code() > current.code() ? update : current;
	}

	R get(long room) {
		return rooms.get(room);
	}

	Collection<R> all() {
		return rooms.values();
	}

	/** @return rooms known and not ended, now */
	int live() {
		return rooms.size();
	}

	/** @return whether the room ended recently (late messages for it are ignored) */
	boolean isTombstoned(long room) {
		synchronized (tombstones) {
			return tombstones.containsKey(room);
		}
	}

	/**
	 * @return the live room, creating it with {@code factory} when unknown; null when it ended recently, or when it
	 *         is unknown and the table is draining or paused ({@link #refusalReason()} tells)
	 */
	R getOrCreate(long room, LongFunction<R> factory) {
		R existing = rooms.get(room);
		if (existing != null) {
			return existing;
		}
		// Created under the tombstones' monitor so that an early end (endBeforeKnown), the start of a drain and a
		// creation never cross.
		synchronized (tombstones) {
			if (tombstones.containsKey(room)) {
				return null;
			}
			R live = rooms.get(room);
			if (live != null || drainReason != null || pauseReason != null) {
				return live;
			}
			R created = factory.apply(room);
			created.admitted = true;
			unfinished.incrementAndGet();
			rooms.put(room, created);
			return created;
		}
	}

	/**
	 * Stops admitting rooms: from now on {@link #getOrCreate} returns only rooms already known. Idempotent (the first
	 * reason stays).
	 *
	 * @param reason why new rooms are refused, naming the manager
	 */
	void drain(String reason) {
		synchronized (tombstones) {
			if (drainReason == null) {
				drainReason = reason;
			}
		}
		checkDrained();
	}

	/** @return why a drain refuses new rooms, or null while the table is not draining */
	String drainReason() {
		return drainReason;
	}

	/**
	 * Stops admitting rooms until {@link #resume()}: {@link #getOrCreate} returns only rooms already known. Unlike a
	 * drain it ends; a drain that starts meanwhile outlasts it.
	 *
	 * @param reason why new rooms are refused, naming the manager
	 */
	void pause(String reason) {
		synchronized (tombstones) {
			pauseReason = reason;
		}
	}

	/** Admits rooms again after {@link #pause}, unless the table drains. */
	void resume() {
		synchronized (tombstones) {
			pauseReason = null;
		}
	}

	/** @return why new rooms are refused (a drain's reason first, else a pause's), or null while the table admits them */
	String refusalReason() {
		String drain = drainReason;
		return drain != null ? drain : pauseReason;
	}

	/**
	 * @return completes once the table drains and every room it admitted ended and was cleaned up; completes on the
	 *         thread that ended the last room, possibly under that room's monitor (subscribers move elsewhere)
	 */
	Mono<Void> drained() {
		return drained.asMono();
	}

	private void checkDrained() {
		if (drainReason != null && unfinished.get() == 0) {
			drained.tryEmitEmpty();
		}
	}

	/**
	 * How a room ended, kept after it is forgotten for an engine that opens it only then: its sender is born failed
	 * so, rather than refused as a room that ran.
	 *
	 * @param cause the category
	 * @param reason names what happened
	 * @param remote whether another rank reported it
	 * @param retryAfter the hint of a room turned away as overloaded, else zero
	 */
	record Ended(FailureCause cause, String reason, boolean remote, Duration retryAfter) {

		/** A room that ran: whoever opens it again is refused, rooms are not reused. */
		static final Ended RAN = new Ended(FailureCause.OTHER, "", false);

		/** An end without a retry hint. */
		Ended(FailureCause cause, String reason, boolean remote) {
			this(cause, reason, remote, Duration.ZERO);
		}
	}

	/**
	 * Ends a room this side does not know yet, so that whoever opens it later finds it ended so instead of waiting for
	 * peers that gave up.
	 *
	 * @return the live room when it appeared meanwhile (the caller ends it as usual), else null
	 */
	R endBeforeKnown(long room, Ended how) {
		synchronized (tombstones) {
			R live = rooms.get(room);
			if (live == null) {
				tombstones.putIfAbsent(room, how);
			}
			return live;
		}
	}

	/** @return how the room ended before an engine opened it here, or null when it did not */
	Ended endedBeforeKnown(long room) {
		synchronized (tombstones) {
			Ended how = tombstones.get(room);
			return how == Ended.RAN ? null : how;
		}
	}

	/**
	 * Moves a room forward (never to Failed: see {@link #fail}), publishes the change and re-arms the state's timeout;
	 * a terminal room is forgotten.
	 *
	 * @return whether the state changed
	 */
	boolean advance(R room, KVPoll state) {
		if (state == KVPoll.FAILED) {
			throw new IllegalArgumentException("state : FAILED (expected: fail(room, cause, reason, remote))");
		}
		return update(room, state, null, "", false);
	}

	/**
	 * {@link #advance} for a room that moves itself: it knows its table but not the table's room type.
	 *
	 * @param room a room made for this table, so that it is one of its {@code R}
	 */
	boolean advanceRoom(Room room, KVPoll state) {
		return advance(own(room), state);
	}

	/**
	 * {@link #fail} for a room that fails itself: it knows its table but not the table's room type.
	 *
	 * @param room a room made for this table, so that it is one of its {@code R}
	 */
	boolean failRoom(Room room, FailureCause cause, String reason, boolean remote) {
		return fail(own(room), cause, reason, remote);
	}

	@SuppressWarnings("unchecked")
	private R own(Room room) {
		return (R) room;
	}

	/** @return where the rooms' subscribers are called */
	Scheduler callbacks() {
		return callbacks;
	}

	/**
	 * Fails a room (ignored for a room that is unknown or already ended), publishes it and forgets the room.
	 *
	 * @param cause the category
	 * @param reason names what happened
	 * @param remote whether another rank reported it
	 * @return whether the state changed
	 */
	boolean fail(R room, FailureCause cause, String reason, boolean remote) {
		return update(room, KVPoll.FAILED, cause, reason, remote);
	}

	private boolean update(R room, KVPoll update, FailureCause cause, String reason, boolean fromAnotherRank) {
		KVPoll[] change = room.apply(update, cause, reason, fromAnotherRank, clock.getAsLong(), terminal -> {
			forget(room, terminal);
			onEnding.accept(room, terminal);
		});
		if (change == null) {
			return false;
		}
		KVPoll next = change[1];
		if (next == KVPoll.FAILED) {
			log.info("[{}] room {} failed ({}): {}", name, room.id, cause.tag(), reason);
		}
		else if (log.isDebugEnabled()) {
			log.debug("[{}] room {} {} -> {}", name, room.id, change[0], next);
		}
		boolean failed = next == KVPoll.FAILED;
		boolean terminal = next.isTerminal();
		// A room's end is the time its phases were fixed at, so that they add up to its duration.
		long now = terminal ? room.clock.endedNanos() : System.nanoTime();
		events.emit(new KVStatusEvent(room.id, change[0], next, failed ? cause : null, failed ? reason : "", now,
				terminal ? room.phases() : RoomPhases.NONE));
		record(room, change[0], next, failed ? cause : null, now);
		if (next.isTerminal()) {
			room.clearTimeout();
			onTerminal.accept(room);
			if (room.admitted && unfinished.decrementAndGet() == 0) {
				checkDrained();
			}
		}
		else {
			armTimeout(room, next);
		}
		return true;
	}

	// Recorded from the callback scheduler, never under the room's monitor: the recorder is the user's code.
	private void record(R room, KVPoll previous, KVPoll next, FailureCause cause, long now) {
		KVMetricsRecorder r = recorder;
		if (r == KVMetricsRecorder.NONE) {
			return;
		}
		if (previous == null) {
			callbacks.schedule(() -> r.roomOpened(name, mode));
		}
		if (next.isTerminal()) {
			long duration = Math.max(0, now - room.firstStateNanos());
			RoomPath path = room.path();
			RoomPhases phases = room.phases();
			KVMetricsRecorder.RoomEnded ended = new KVMetricsRecorder.RoomEnded(name, mode, next, cause, duration, path,
					phases);
			callbacks.schedule(() -> r.roomEnded(ended));
		}
	}

	// Under the room's monitor, as it ends.
	private void forget(R room, KVPoll terminal) {
		rooms.remove(room.id, room);
		Ended how = room.endedUnopened(terminal);
		synchronized (tombstones) {
			tombstones.put(room.id, how == null ? Ended.RAN : how);
		}
	}

	// Each live state has its own limit from the moment the room entered it. The room keeps one timer, the earliest
	// deadline any state asked for; when it fires while the room is in a later state it arms that state's deadline.
	// A timer thread is thus woken about once per room rather than once per state.
	private void armTimeout(R room, KVPoll state) {
		long limit = limitNanos(state);
		if (limit > 0) {
			arm(room, room.stateSince() + limit);
		}
	}

	private void arm(R room, long deadline) {
		Room.Timeout next = room.needsTimeout(deadline);
		if (next == null || !room.install(next)) {
			return;
		}
		long delay = Math.max(0, deadline - clock.getAsLong());
		next.scheduled(timer.schedule(() -> expire(room, next), delay, TimeUnit.NANOSECONDS));
	}

	private void expire(R room, Room.Timeout fired) {
		if (!room.fired(fired)) {
			return;
		}
		KVPoll state = room.state();
		long limit = state == null || state.isTerminal() ? 0 : limitNanos(state);
		if (limit <= 0) {
			return;
		}
		long since = room.stateSince();
		long now = clock.getAsLong();
		if (now - since < limit) {
			arm(room, since + limit);
		}
		else if (room.state() == state && room.stateSince() == since) {
			// The state's name alone sends nobody anywhere: say what the room waited on, where it is known.
			String stalled = room.stalledBy();
			fail(room, FailureCause.TIMEOUT, "Request " + room.id + " timed out after "
					+ format(timeouts[state.code()]) + " in KVPoll." + state + (stalled == null ? "" : "; " + stalled),
					false);
		}
		else {
			// It moved on meanwhile: its new state has its own limit.
			armTimeout(room, room.state());
		}
	}

	private long limitNanos(KVPoll state) {
		Duration limit = timeouts[state.code()];
		return limit == null || limit.isZero() || limit.isNegative() ? 0 : limit.toNanos();
	}

	private static String format(Duration d) {
		return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
	}

	/**
	 * Hot stream of every change, called on the callback scheduler. Each subscriber gets its own bounded buffer; when
	 * it does not keep up, its oldest buffered events are dropped, never the emitters slowed.
	 */
	Flux<KVStatusEvent> events() {
		return events.flux();
	}

	void complete() {
		events.complete();
	}
}
