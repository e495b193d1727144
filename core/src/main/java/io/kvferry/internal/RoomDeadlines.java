package io.kvferry.internal;

import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.scheduler.Scheduler;

/**
 * The armed state deadlines of one table's rooms, on one alarm: the timer is asked to wake only for the earliest
 * deadline, not once per room. A room's deadline usually lies after every one armed before it (the same limit, a
 * later start), so arming one costs an insertion into a lock-free ordered set and no timer task, and a room that ends
 * takes its deadline out of that set: a timer's queue and its lock, which every event loop and every caller's thread
 * would share, are touched once per alarm, and the timer's thread is woken only when a deadline is due or an earlier
 * one was armed.
 */
final class RoomDeadlines<R> {

	private static final long NONE = Long.MAX_VALUE;
	private static final Comparator<Timeout<?>> ORDER = Comparator.comparingLong((Timeout<?> t) -> t.deadline)
			.thenComparingLong(t -> t.seq);

	/**
	 * One room's armed deadline. A room keeps at most one: moving to a state whose limit ends later than the armed one
	 * leaves it be (it re-arms itself when it comes due early), so a room whose limits are alike arms one deadline in
	 * its life instead of one per state.
	 */
	static final class Timeout<R> {
		final R room;
		final long deadline;
		// Orders deadlines that fall on the same nanosecond.
		final long seq;

		Timeout(R room, long deadline, long seq) {
			this.room = room;
			this.deadline = deadline;
			this.seq = seq;
		}
	}

	private final Scheduler timer;
	private final LongSupplier clock;
	private final Consumer<Timeout<R>> expire;
	private final ConcurrentSkipListMap<Timeout<R>, Boolean> armed = new ConcurrentSkipListMap<>(ORDER);
	// Orders deadlines that fall on the same nanosecond.
	private final AtomicLong seqs = new AtomicLong();
	// When the alarm that covers every armed deadline rings, or NONE while none is set (it is ringing, or nothing is
	// armed). Only moves earlier while set: a later deadline is covered by the alarm already set.
	private final AtomicLong alarmAt = new AtomicLong(NONE);
	// The alarms that have not rung yet, disposed when the table closes. An alarm that an earlier deadline superseded
	// is left to ring (disposing it could interrupt it as it starts): it expires what is due, which is harmless.
	private final Disposable.Composite pending = Disposables.composite();

	/**
	 * @param timer the scheduler alarms ring on
	 * @param clock what deadlines are measured on, in nanoseconds
	 * @param expire called on the timer's thread with each deadline that came due, once it was taken out
	 */
	RoomDeadlines(Scheduler timer, LongSupplier clock, Consumer<Timeout<R>> expire) {
		this.timer = timer;
		this.clock = clock;
		this.expire = expire;
	}

	/** @return a deadline for {@code room} at {@code deadline}, to install on the room and then {@link #arm} */
	Timeout<R> timeout(R room, long deadline) {
		return new Timeout<>(room, deadline, seqs.getAndIncrement());
	}

	/** Arms {@code t}: it expires once due, unless {@link #disarm disarmed} before. */
	void arm(Timeout<R> t) {
		armed.put(t, Boolean.TRUE);
		ringBy(t.deadline);
	}

	void disarm(Timeout<?> t) {
		armed.remove(t);
	}

	/** Stops the alarms: the table closed, and its rooms all ended. */
	void close() {
		pending.dispose();
	}

	/** @return how many deadlines are armed (tests) */
	int size() {
		return armed.size();
	}

	// Inserted before it asks for an alarm, so that an alarm that rings meanwhile finds the deadline and covers it.
	private void ringBy(long deadline) {
		for (;;) {
			long at = alarmAt.get();
			if (at <= deadline) {
				return;
			}
			if (alarmAt.compareAndSet(at, deadline)) {
				Alarm alarm = new Alarm(deadline);
				alarm.scheduled(timer.schedule(alarm, Math.max(0, deadline - clock.getAsLong()), TimeUnit.NANOSECONDS));
				return;
			}
		}
	}

	/** One alarm: pending from its scheduling until it rings, whichever of the two its thread sees first. */
	private final class Alarm implements Runnable {
		private final long at;
		private volatile Disposable task;
		private volatile boolean rang;

		Alarm(long at) {
			this.at = at;
		}

		void scheduled(Disposable t) {
			task = t;
			// A closed table's composite disposes what is added to it.
			pending.add(t);
			if (rang) {
				pending.remove(t);
			}
		}

		@Override
		public void run() {
			rang = true;
			Disposable t = task;
			if (t != null) {
				pending.remove(t);
			}
			ring(at);
		}
	}

	private void ring(long at) {
		// Only the alarm set last clears the mark; a superseded one still expires what is due, which is harmless.
		alarmAt.compareAndSet(at, NONE);
		long now = clock.getAsLong();
		for (;;) {
			Map.Entry<Timeout<R>, Boolean> first = armed.firstEntry();
			if (first == null) {
				return;
			}
			Timeout<R> t = first.getKey();
			if (t.deadline > now) {
				ringBy(t.deadline);
				return;
			}
			if (armed.remove(t) != null) {
				expire.accept(t);
			}
		}
	}
}
