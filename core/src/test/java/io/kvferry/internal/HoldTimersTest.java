package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.harness.ModelShape;
import io.kvferry.test.InMemoryPair;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * A prefill room that waited for its sender (decode asked first) or for decode's request (the engine sent first) has
 * a timer that fails it if the wait is too long. Once the wait is over the timer is cancelled: left to fire, it would
 * keep every such room, ended long ago, reachable until its timeout, a minute's worth of rooms on a busy rank. So is
 * the timer of an aborted decode room's wait for its prefill ranks' acknowledgements, once they acknowledged.
 */
class HoldTimersTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 1, 16, 2, 4, false, 0, 0, 0);
	private static final int[] SRC = { 3, 5 };
	private static final int[] DST = { 7, 1 };
	// Distinct from every other timer of a manager, so that the counting timer tells the holds' tasks apart.
	private static final Duration UNCLAIMED = Duration.ofSeconds(41);
	private static final Duration EARLY = Duration.ofSeconds(43);
	private static final Duration ABORT_WAIT = Duration.ofSeconds(47);

	private final CountingTimer timer = new CountingTimer();
	private InMemoryPair pair;

	@AfterEach
	void close() {
		if (pair != null) {
			pair.close();
		}
		timer.dispose();
	}

	private void start() {
		pair = InMemoryPair.start(SHAPE, 16,
				p -> p.unclaimedRoomTimeout(UNCLAIMED).optimisticSends(16, EARLY).timer(timer), d -> d);
	}

	private KVSender send(long room) {
		pair.prefillMemory.fill(room, SRC, -1, new int[0]);
		KVSender s = pair.prefill.sender(room);
		s.init(SRC.length, -1);
		s.send(SRC, new int[0]);
		return s;
	}

	private KVReceiver ask(long room) {
		KVReceiver r = pair.decode.receiver(InMemoryPair.BOOTSTRAP, room);
		r.sendMetadata(DST, -1, new int[0]);
		return r;
	}

	private static void succeed(KVSender s, KVReceiver r) {
		StepVerifier.create(r.completion()).verifyComplete();
		StepVerifier.create(s.completion()).verifyComplete();
	}

	@Test
	void aRoomDecodeAskedForBeforeItsSenderLeavesNoTimerBehind() {
		start();
		KVReceiver r = ask(1);
		// Prefill publishes the request once it holds it for the engine.
		StepVerifier.create(pair.prefill.roomRequests().filter(q -> q.room() == 1).next()).expectNextCount(1)
				.verifyComplete();
		assertThat(timer.pending(UNCLAIMED)).as("the unclaimed room's timer, while it waits").isEqualTo(1);

		succeed(send(1), r);

		assertThat(pair.decodeMemory.verify(1, DST, -1, new int[0])).isNull();
		assertThat(timer.pending(UNCLAIMED)).as("timers of claimed rooms still scheduled").isZero();
	}

	@Test
	void aRoomSentBeforeDecodeAskedLeavesNoTimerBehind() {
		start();
		KVSender s = send(2);
		assertThat(timer.pending(EARLY)).as("the early room's timer, while it waits").isEqualTo(1);

		succeed(s, ask(2));

		assertThat(pair.decodeMemory.verify(2, DST, -1, new int[0])).isNull();
		assertThat(timer.pending(EARLY)).as("timers of asked-for rooms still scheduled").isZero();
	}

	@Test
	void anAbortedRoomWhoseRankAcknowledgedLeavesNoTimerBehind() {
		pair = InMemoryPair.start(SHAPE, 16, p -> p, d -> d.handshakeTimeout(ABORT_WAIT).timer(timer));
		KVReceiver r = ask(3);
		StepVerifier.create(r.states().filter(s -> s == io.kvferry.KVPoll.WAITING_FOR_INPUT).next())
				.expectNextCount(1).verifyComplete();

		r.abort("the engine gave up");

		// The error comes once the prefill rank acknowledged the abort and the room's pages were released.
		StepVerifier.create(r.completion()).expectError(io.kvferry.KVTransferException.class).verify(T);
		assertThat(timer.pending(ABORT_WAIT)).as("the abort's wait for the rank's acknowledgement, still scheduled")
				.isZero();
	}

	/** Runs tasks on a scheduler of its own and counts, per delay, those neither run nor cancelled yet. */
	private static final class CountingTimer implements Scheduler {

		private final Scheduler delegate = Schedulers.newSingle("hold-timers-test", true);
		private final Set<Task> pending = ConcurrentHashMap.newKeySet();

		long pending(Duration delay) {
			return pending.stream().filter(t -> t.delayNanos == delay.toNanos()).count();
		}

		@Override
		public Disposable schedule(Runnable task) {
			return delegate.schedule(task);
		}

		@Override
		public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
			Task t = new Task(unit.toNanos(delay));
			pending.add(t);
			t.scheduled = delegate.schedule(() -> {
				pending.remove(t);
				task.run();
			}, delay, unit);
			return t;
		}

		@Override
		public Disposable schedulePeriodically(Runnable task, long initialDelay, long period, TimeUnit unit) {
			return delegate.schedulePeriodically(task, initialDelay, period, unit);
		}

		@Override
		public Worker createWorker() {
			return delegate.createWorker();
		}

		@Override
		public void dispose() {
			delegate.dispose();
		}

		private final class Task implements Disposable {

			final long delayNanos;
			volatile Disposable scheduled;

			Task(long delayNanos) {
				this.delayNanos = delayNanos;
			}

			@Override
			public void dispose() {
				pending.remove(this);
				scheduled.dispose();
			}

			@Override
			public boolean isDisposed() {
				return !pending.contains(this);
			}
		}
	}
}
