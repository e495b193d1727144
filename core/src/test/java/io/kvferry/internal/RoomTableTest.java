package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.KVStatusEvent;
import io.kvferry.KVTransferException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;

class RoomTableTest {

	private static final Duration T = Duration.ofSeconds(5);

	private final List<Room> ended = new ArrayList<>();

	private RoomTable<Room> table(reactor.core.scheduler.Scheduler timer, int buffer) {
		return new RoomTable<>("test", timer, Schedulers.immediate(), Duration.ofSeconds(300),
				Duration.ofSeconds(200), Duration.ofSeconds(100), buffer, (r, s) -> { }, ended::add);
	}

	private static Flux<KVPoll> states(Room r) {
		return r.states(Schedulers.immediate());
	}

	private static reactor.core.publisher.Mono<Void> completion(Room r) {
		return r.completion();
	}

	@Test
	void unknownRoomTakesAnyStateButFailed() {
		for (KVPoll s : KVPoll.values()) {
			assertThat(RoomTable.merge(null, s)).isEqualTo(s == KVPoll.FAILED ? null : s);
		}
	}

	@Test
	void failedOverridesEveryStateEvenSuccess() {
		for (KVPoll current : KVPoll.values()) {
			assertThat(RoomTable.merge(current, KVPoll.FAILED)).as("%s + FAILED", current).isEqualTo(KVPoll.FAILED);
		}
	}

	@Test
	void aRoomLatchesItsFirstTerminalState() {
		RoomTable<Room> t = table(VirtualTimeScheduler.create(), 16);
		Room r = t.getOrCreate(8, n -> new Room(n, t));
		t.advance(r, KVPoll.TRANSFERRING);
		assertThat(t.advance(r, KVPoll.SUCCESS)).isTrue();
		assertThat(t.fail(r, FailureCause.OTHER, "late", true)).as("the sender already reported Success").isFalse();
		assertThat(r.state()).isEqualTo(KVPoll.SUCCESS);
		StepVerifier.create(completion(r)).verifyComplete();
	}

	@Test
	void completionHandsOffToTheCallbacksOncePerRoomNotOncePerState() {
		java.util.concurrent.atomic.AtomicInteger handoffs = new java.util.concurrent.atomic.AtomicInteger();
		// Each hand-off to a callback worker is a thread wake-up: the room's cost outside its bytes.
		reactor.core.scheduler.Scheduler counting = Schedulers.fromExecutor(task -> {
			handoffs.incrementAndGet();
			task.run();
		});
		RoomTable<Room> t = new RoomTable<>("test", VirtualTimeScheduler.create(), counting, Duration.ofSeconds(300),
				Duration.ofSeconds(200), Duration.ofSeconds(100), 16, (r, s) -> { }, ended::add);
		Room r = t.getOrCreate(9, n -> new Room(n, t));
		StepVerifier.create(r.completion())
				.then(() -> {
					t.advance(r, KVPoll.BOOTSTRAPPING);
					t.advance(r, KVPoll.WAITING_FOR_INPUT);
					t.advance(r, KVPoll.TRANSFERRING);
					t.advance(r, KVPoll.SUCCESS);
				})
				.verifyComplete();
		assertThat(handoffs).as("tasks run on the callback scheduler").hasValueLessThanOrEqualTo(2);
	}

	@Test
	void liveStatesOnlyMoveForward() {
		for (KVPoll current : KVPoll.values()) {
			for (KVPoll update : KVPoll.values()) {
				if (update == KVPoll.FAILED) {
					continue;
				}
				KVPoll expected = update.code() > current.code() ? update : current;
				assertThat(RoomTable.merge(current, update)).as("%s + %s", current, update).isEqualTo(expected);
			}
		}
	}

	@Test
	void whoeverSeesATerminalStateFindsItCountedAndTheRoomForgotten() {
		List<Long> counted = new ArrayList<>();
		RoomTable<Room> t = new RoomTable<>("test", VirtualTimeScheduler.create(), Schedulers.immediate(), Duration.ofSeconds(300),
				Duration.ofSeconds(200), Duration.ofSeconds(100), 16, (r, s) -> counted.add(r.id), ended::add);
		Room r = t.getOrCreate(4, n -> new Room(n, t));
		List<String> seen = new ArrayList<>();
		StepVerifier.create(states(r).doOnNext(s -> seen.add(s + " counted=" + counted + " known="
				+ (t.get(4) != null) + " cleaned=" + ended.size())))
				.then(() -> t.advance(r, KVPoll.WAITING_FOR_INPUT))
				.then(() -> t.fail(r, FailureCause.OTHER, "gone", false))
				.expectNextCount(2)
				.verifyComplete();
		// Counting precedes publication; engine cleanup follows it.
		assertThat(seen).containsExactly("WAITING_FOR_INPUT counted=[] known=true cleaned=0",
				"FAILED counted=[4] known=false cleaned=0");
		assertThat(ended).containsExactly(r);
	}

	@Test
	void aTerminalStateReadWithoutTheMonitorIsWrittenOnlyOnceTheRoomIsCounted() {
		// The state is volatile and read lock-free (per-frame gates, poll()): it must not turn terminal before the
		// room is counted, or a reader could see the end and not yet find it in the statistics.
		List<String> atCount = new ArrayList<>();
		RoomTable<Room> t = new RoomTable<>("test", VirtualTimeScheduler.create(), Schedulers.immediate(),
				Duration.ofSeconds(300), Duration.ofSeconds(200), Duration.ofSeconds(100), 16,
				(r, outcome) -> atCount.add(outcome + " while the room read " + r.state()), ended::add);
		Room ok = t.getOrCreate(1, n -> new Room(n, t));
		t.advance(ok, KVPoll.TRANSFERRING);
		t.advance(ok, KVPoll.SUCCESS);
		Room failed = t.getOrCreate(2, n -> new Room(n, t));
		t.advance(failed, KVPoll.BOOTSTRAPPING);
		t.fail(failed, FailureCause.OTHER, "gone", false);
		assertThat(atCount).containsExactly("SUCCESS while the room read TRANSFERRING", "FAILED while the room read BOOTSTRAPPING");
		assertThat(ok.state()).isEqualTo(KVPoll.SUCCESS);
		assertThat(failed.state()).isEqualTo(KVPoll.FAILED);
	}

	@Test
	void failedUpdateForUnknownRoomIsIgnoredAndPublishesNothing() {
		RoomTable<Room> t = table(VirtualTimeScheduler.create(), 16);
		Room r = new Room(1, t);
		StepVerifier.create(t.events())
				.then(() -> assertThat(t.fail(r, FailureCause.OTHER, "late", true)).isFalse())
				.then(t::complete)
				.verifyComplete();
		assertThat(r.state()).isNull();
	}

	@Test
	void publishesEveryChangeWithPreviousStateAndReason() {
		RoomTable<Room> t = table(VirtualTimeScheduler.create(), 16);
		Room r = t.getOrCreate(9, n -> new Room(n, t));
		StepVerifier.create(t.events().map(e -> e.previous() + ">" + e.current() + ":" + e.reason()))
				.then(() -> {
					t.advance(r, KVPoll.BOOTSTRAPPING);
					t.advance(r, KVPoll.TRANSFERRING);
					t.advance(r, KVPoll.WAITING_FOR_INPUT);
					t.fail(r, FailureCause.OTHER, "boom", true);
					t.advance(r, KVPoll.SUCCESS);
					t.complete();
				})
				.expectNext("null>BOOTSTRAPPING:", "BOOTSTRAPPING>TRANSFERRING:", "TRANSFERRING>FAILED:boom")
				.verifyComplete();
		assertThat(t.get(9)).as("terminal rooms are forgotten").isNull();
		assertThat(t.isTombstoned(9)).isTrue();
		assertThat(t.getOrCreate(9, n -> new Room(n, t))).as("an ended room never comes back").isNull();
		assertThat(ended).containsExactly(r);
	}

	@Test
	void roomStatesStartWithCurrentStateForLateSubscribersAndCompleteAfterTerminal() {
		RoomTable<Room> t = table(VirtualTimeScheduler.create(), 16);
		Room r = t.getOrCreate(3, n -> new Room(n, t));
		t.advance(r, KVPoll.BOOTSTRAPPING);
		t.advance(r, KVPoll.WAITING_FOR_INPUT);
		StepVerifier.create(states(r))
				.expectNext(KVPoll.WAITING_FOR_INPUT)
				.then(() -> t.advance(r, KVPoll.SUCCESS))
				.expectNext(KVPoll.SUCCESS)
				.verifyComplete();
		StepVerifier.create(states(r)).expectNext(KVPoll.SUCCESS).verifyComplete();
		StepVerifier.create(completion(r)).verifyComplete();
	}

	@Test
	void slowRoomSubscriberNeverBlocksEmittersAndStillGetsTheTerminalState() {
		RoomTable<Room> t = table(VirtualTimeScheduler.create(), 16);
		Room r = t.getOrCreate(4, n -> new Room(n, t));
		t.advance(r, KVPoll.BOOTSTRAPPING);
		StepVerifier.create(states(r), 0)
				.then(() -> {
					// No demand at all: the emitter must still run to the end.
					t.advance(r, KVPoll.WAITING_FOR_INPUT);
					t.advance(r, KVPoll.TRANSFERRING);
					t.fail(r, FailureCause.OTHER, "peer gone", true);
				})
				.thenRequest(10)
				.expectNext(KVPoll.BOOTSTRAPPING, KVPoll.WAITING_FOR_INPUT, KVPoll.TRANSFERRING, KVPoll.FAILED)
				.verifyComplete();
		StepVerifier.create(completion(r))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVTransferException.class)
						.hasMessageContaining("peer gone")
						.satisfies(x -> assertThat(((KVTransferException) x).isFromAnotherRank()).isTrue()))
				.verify(T);
	}

	@Test
	void slowEventSubscriberLosesOnlyOldestEventsAndKeepsTheNewest() {
		RoomTable<Room> t = table(VirtualTimeScheduler.create(), 4);
		StepVerifier.create(t.events(), 0)
				.then(() -> {
					for (long id = 1; id <= 100; id++) {
						Room r = t.getOrCreate(id, n -> new Room(n, t));
						t.advance(r, KVPoll.BOOTSTRAPPING);
						t.advance(r, KVPoll.SUCCESS);
					}
					t.complete();
				})
				.thenRequest(1000)
				// The first events already on their way to the subscriber's worker, then the newest of its buffer.
				.expectNextCount(HotStream.HANDOFF + 3)
				.assertNext(e -> assertThat(e.room()).isEqualTo(100L))
				.verifyComplete();
	}

	@Test
	void eventsAreHot() {
		RoomTable<Room> t = table(VirtualTimeScheduler.create(), 16);
		Room a = t.getOrCreate(1, n -> new Room(n, t));
		t.advance(a, KVPoll.BOOTSTRAPPING);
		Flux<KVStatusEvent> events = t.events();
		StepVerifier.create(events.map(KVStatusEvent::room))
				.then(() -> {
					t.advance(t.getOrCreate(2, n -> new Room(n, t)), KVPoll.BOOTSTRAPPING);
					t.complete();
				})
				.expectNext(2L)
				.verifyComplete();
	}

	@Test
	void everyLiveStateTimesOutOnItsOwnLimit() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		RoomTable<Room> t = table(vts, 16);
		Room boot = t.getOrCreate(1, n -> new Room(n, t));
		Room wait = t.getOrCreate(2, n -> new Room(n, t));
		Room xfer = t.getOrCreate(3, n -> new Room(n, t));
		t.advance(boot, KVPoll.BOOTSTRAPPING);
		t.advance(wait, KVPoll.WAITING_FOR_INPUT);
		t.advance(xfer, KVPoll.TRANSFERRING);
		vts.advanceTimeBy(Duration.ofSeconds(99));
		assertThat(xfer.state()).isEqualTo(KVPoll.TRANSFERRING);
		vts.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(xfer.state()).isEqualTo(KVPoll.FAILED);
		assertThat(xfer.reason()).isEqualTo("Request 3 timed out after 100s in KVPoll.TRANSFERRING");
		vts.advanceTimeBy(Duration.ofSeconds(100));
		assertThat(wait.state()).isEqualTo(KVPoll.FAILED);
		assertThat(boot.state()).isEqualTo(KVPoll.BOOTSTRAPPING);
		vts.advanceTimeBy(Duration.ofSeconds(100));
		assertThat(boot.reason()).contains("BOOTSTRAPPING");
	}

	@Test
	void movingToTheNextStateRestartsTheClockAndTerminalStatesCancelIt() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		RoomTable<Room> t = table(vts, 16);
		Room r = t.getOrCreate(1, n -> new Room(n, t));
		t.advance(r, KVPoll.BOOTSTRAPPING);
		vts.advanceTimeBy(Duration.ofSeconds(299));
		t.advance(r, KVPoll.WAITING_FOR_INPUT);
		vts.advanceTimeBy(Duration.ofSeconds(199));
		assertThat(r.state()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		t.advance(r, KVPoll.SUCCESS);
		vts.advanceTimeBy(Duration.ofDays(1));
		assertThat(r.state()).isEqualTo(KVPoll.SUCCESS);
	}

	@Test
	void aRoomWhoseLimitsAreAlikeArmsOneTimerInItsLifeAndStillTimesOutPerState() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		CountingTimer timer = new CountingTimer(vts);
		Duration limit = Duration.ofSeconds(100);
		RoomTable<Room> t = new RoomTable<>("test", timer, Schedulers.immediate(), limit, limit, limit, 16,
				(r, s) -> { }, ended::add);
		Room ok = t.getOrCreate(1, n -> new Room(n, t));
		t.advance(ok, KVPoll.BOOTSTRAPPING);
		t.advance(ok, KVPoll.WAITING_FOR_INPUT);
		t.advance(ok, KVPoll.TRANSFERRING);
		t.advance(ok, KVPoll.SUCCESS);
		assertThat(timer.scheduled).as("one timer for a room's four states").isEqualTo(1);

		Room slow = t.getOrCreate(2, n -> new Room(n, t));
		t.advance(slow, KVPoll.BOOTSTRAPPING);
		vts.advanceTimeBy(Duration.ofSeconds(60));
		t.advance(slow, KVPoll.WAITING_FOR_INPUT);
		assertThat(timer.scheduled).isEqualTo(2);
		// Bootstrapping's timer fires at 100 s, finds the room waiting since 60 s and arms 160 s.
		vts.advanceTimeBy(Duration.ofSeconds(99));
		assertThat(slow.state()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		assertThat(timer.scheduled).isEqualTo(3);
		vts.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(slow.state()).isEqualTo(KVPoll.FAILED);
		assertThat(slow.reason()).isEqualTo("Request 2 timed out after 100s in KVPoll.WAITING_FOR_INPUT");
	}

	@Test
	void aLaterStateWithAShorterLimitTimesOutOnItsOwnDeadline() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		RoomTable<Room> t = table(vts, 16);
		Room r = t.getOrCreate(1, n -> new Room(n, t));
		t.advance(r, KVPoll.BOOTSTRAPPING);
		vts.advanceTimeBy(Duration.ofSeconds(10));
		t.advance(r, KVPoll.TRANSFERRING);
		vts.advanceTimeBy(Duration.ofSeconds(99));
		assertThat(r.state()).isEqualTo(KVPoll.TRANSFERRING);
		vts.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(r.state()).as("100 s after Transferring began, long before Bootstrapping's 300 s").isEqualTo(
				KVPoll.FAILED);
		assertThat(r.reason()).isEqualTo("Request 1 timed out after 100s in KVPoll.TRANSFERRING");
	}

	@Test
	void aTimerThatFiresBeforeItsArmingReturnedStillTimesTheRoomOut() {
		// A timer thread may run a task before schedule() has even returned to the thread that armed it.
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		CountingTimer timer = new CountingTimer(vts) {
			@Override
			public reactor.core.Disposable schedule(Runnable task, long delay, java.util.concurrent.TimeUnit unit) {
				if (scheduled++ == 0) {
					task.run();
					return () -> { };
				}
				return vts.schedule(task, delay, unit);
			}
		};
		Duration limit = Duration.ofSeconds(100);
		RoomTable<Room> t = new RoomTable<>("test", timer, Schedulers.immediate(), limit, limit, limit, 16,
				(r, s) -> { }, ended::add);
		Room r = t.getOrCreate(1, n -> new Room(n, t));
		t.advance(r, KVPoll.BOOTSTRAPPING);
		vts.advanceTimeBy(Duration.ofSeconds(100));
		assertThat(r.state()).isEqualTo(KVPoll.FAILED);
	}

	@Test
	void aTimerThatTellsTheWallClockMeasuresDeadlinesOnAClockNoStepMoves() {
		// Reactor's schedulers tell the wall clock: one stepped an hour forward must not fail a room whose state began
		// a moment before, when a timer armed for its earlier state fires.
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		long[] step = { 0 };
		CountingTimer wallClock = new CountingTimer(vts) {
			@Override
			public long now(java.util.concurrent.TimeUnit unit) {
				return unit.convert(System.currentTimeMillis() + step[0], java.util.concurrent.TimeUnit.MILLISECONDS);
			}
		};
		Duration limit = Duration.ofSeconds(300);
		RoomTable<Room> t = new RoomTable<>("test", wallClock, Schedulers.immediate(), limit, limit, limit, 16,
				(r, s) -> { }, ended::add);
		Room r = t.getOrCreate(1, n -> new Room(n, t));
		t.advance(r, KVPoll.BOOTSTRAPPING);
		vts.advanceTimeBy(Duration.ofSeconds(299));
		t.advance(r, KVPoll.WAITING_FOR_INPUT);
		step[0] = Duration.ofHours(1).toMillis();
		vts.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(r.state()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
	}

	// Counts the timers a table schedules; time and running are the virtual scheduler's.
	private static class CountingTimer implements reactor.core.scheduler.Scheduler {
		final VirtualTimeScheduler clock;
		int scheduled;

		CountingTimer(VirtualTimeScheduler clock) {
			this.clock = clock;
		}

		@Override
		public reactor.core.Disposable schedule(Runnable task) {
			return clock.schedule(task);
		}

		@Override
		public reactor.core.Disposable schedule(Runnable task, long delay, java.util.concurrent.TimeUnit unit) {
			scheduled++;
			return clock.schedule(task, delay, unit);
		}

		@Override
		public long now(java.util.concurrent.TimeUnit unit) {
			return clock.now(unit);
		}

		@Override
		public Worker createWorker() {
			return clock.createWorker();
		}
	}
}
