package io.kvferry.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/**
 * The leases on the rooms one decode rank asked a prefill rank for: each room is held while the decode rank renews
 * it, and a room not renewed for a whole lease period is handed back by {@link #expire}, so that its pages are freed.
 *
 * <p>Time is counted in the {@link Sweeper}'s ticks, {@value #TICKS} per lease period, not read from a clock: ticks run
 * with a fixed delay on the manager's timer (virtual time in tests), so a pause of the prefill process itself (a long
 * GC, a stopped JVM) ages every lease by one tick, not by the pause, and renewals that waited in the socket meanwhile
 * still count. A lease ends between {@value #TICKS} and {@value #TICKS} + 1 ticks after its last renewal, that is
 * within 1.1 lease periods.
 *
 * @param <R> what holds a room (the prefill room)
 */
final class RoomLeases<R> {

	/** Ticks per lease period. */
	static final int TICKS = 10;
	private static final String EXPIRED = "lease on room ";

	private final LongSupplier ticks;
	private final ConcurrentHashMap<Long, Lease<R>> held = new ConcurrentHashMap<>();
	// The tick of the last renewal message, of any room: tells a silent decode rank from one that forgot a room.
	private volatile long lastRenewal = -1;

	/** @param ticks the sweeper's tick count */
	RoomLeases(LongSupplier ticks) {
		this.ticks = ticks;
	}

	/**
	 * One room's lease.
	 *
	 * @param <R> what holds the room
	 */
	static final class Lease<R> {
		final long room;
		final R holder;
		// Tick of the last renewal (the request counts as the first).
		volatile long renewed;

		Lease(long room, R holder, long renewed) {
			this.room = room;
			this.holder = holder;
			this.renewed = renewed;
		}
	}

	/** Starts the lease of {@code room}: the request that asked for it counts as its first renewal. */
	void hold(long room, R holder) {
		held.put(room, new Lease<>(room, holder, ticks.getAsLong()));
	}

	/**
	 * Holds {@code room} as if last renewed at {@code tick}: a room whose decode rank went keeps the time its lease had
	 * left, so that waiting for a replacement never extends it.
	 */
	void hold(long room, R holder, long tick) {
		held.put(room, new Lease<>(room, holder, tick));
	}

	/** @return the tick {@code room}'s lease was last renewed at, or now when it has none */
	long renewed(long room) {
		Lease<R> l = held.get(room);
		return l != null ? l.renewed : ticks.getAsLong();
	}

	/** Ends the lease of {@code room} held by {@code holder}: the room ended. */
	void release(long room, R holder) {
		Lease<R> l = held.get(room);
		if (l != null && l.holder == holder) {
			held.remove(room, l);
		}
	}

	/**
	 * Renews the listed rooms; a room this rank does not hold for the decode rank (it ended, or never was asked) is
	 * ignored.
	 *
	 * @return how many leases were renewed
	 */
	int renew(long[] rooms) {
		long now = ticks.getAsLong();
		lastRenewal = now;
		int renewed = 0;
		for (long room : rooms) {
			Lease<R> l = held.get(room);
			if (l != null) {
				l.renewed = now;
				renewed++;
			}
		}
		return renewed;
	}

	/**
	 * Takes out every lease not renewed for more than {@value #TICKS} ticks.
	 *
	 * @return the expired leases, no longer held
	 */
	List<Lease<R>> expire() {
		long now = ticks.getAsLong();
		List<Lease<R>> expired = null;
		for (Lease<R> l : held.values()) {
			if (now - l.renewed > TICKS && held.remove(l.room, l)) {
				if (expired == null) {
					expired = new ArrayList<>();
				}
				expired.add(l);
			}
		}
		return expired == null ? List.of() : expired;
	}

	/** @return ticks since the last renewal message, of any room; -1 when none came */
	long sinceLastRenewal() {
		long last = lastRenewal;
		return last < 0 ? -1 : ticks.getAsLong() - last;
	}

	/** @return ticks since {@code lease} was last renewed */
	long since(Lease<R> lease) {
		return ticks.getAsLong() - lease.renewed;
	}

	/** @return why {@code room}'s lease expired, naming the decode rank, its silence and the rest of {@code detail} */
	static String expired(long room, String detail) {
		return EXPIRED + room + " expired: " + detail;
	}

	/** Forgets every lease: the decode rank's connection is gone, and its rooms failed with it. */
	void clear() {
		held.clear();
	}

	/** @return leases held */
	int size() {
		return held.size();
	}

	/**
	 * Counts ticks on a timer with a fixed delay, {@value #TICKS} per lease period, and runs the expiry after each.
	 */
	static final class Sweeper implements Disposable, LongSupplier {

		private static final Logger log = LoggerFactory.getLogger(Sweeper.class);

		private final Scheduler timer;
		private final long tickNanos;
		private final Runnable onTick;
		private volatile long ticks;
		private volatile boolean disposed;
		private volatile Disposable next;

		/**
		 * @param timer runs the ticks
		 * @param periodNanos the lease period
		 * @param onTick runs after each tick (the expiry); its failure is logged and the ticks go on
		 */
		Sweeper(Scheduler timer, long periodNanos, Runnable onTick) {
			this.timer = timer;
			this.tickNanos = Math.max(1, periodNanos / TICKS);
			this.onTick = onTick;
		}

		/** @return this, ticking */
		Sweeper start() {
			schedule();
			return this;
		}

		private void schedule() {
			if (!disposed) {
				next = timer.schedule(this::tick, tickNanos, TimeUnit.NANOSECONDS);
			}
		}

		private void tick() {
			if (disposed) {
				return;
			}
			ticks++;
			try {
				onTick.run();
			}
			catch (RuntimeException e) {
				log.warn("expiring leases failed; the leases are checked again next tick", e);
			}
			// A fixed delay, not a fixed rate: after a pause the ticks do not catch up, and the pause ages no lease.
			schedule();
		}

		@Override
		public long getAsLong() {
			return ticks;
		}

		/** @return the milliseconds {@code ticks} ticks take at least */
		long millis(long ticks) {
			return TimeUnit.NANOSECONDS.toMillis(ticks * tickNanos);
		}

		@Override
		public void dispose() {
			disposed = true;
			Disposable n = next;
			if (n != null) {
				n.dispose();
			}
		}

		@Override
		public boolean isDisposed() {
			return disposed;
		}
	}
}
