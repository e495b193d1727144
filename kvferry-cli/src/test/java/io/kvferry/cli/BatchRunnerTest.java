package io.kvferry.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.harness.RoomResult;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

class BatchRunnerTest {

	private static final Duration TIMEOUT = Duration.ofSeconds(10);

	/** Rooms that end when the test says so; records how many ran at once. */
	private static final class Rooms {
		final Map<Long, Sinks.One<RoomResult>> open = new ConcurrentHashMap<>();
		final List<Long> started = new CopyOnWriteArrayList<>();
		final BlockingQueue<Long> starts = new LinkedBlockingQueue<>();
		final AtomicInteger inFlight = new AtomicInteger();
		final AtomicInteger maxInFlight = new AtomicInteger();

		Mono<RoomResult> run(Workload.Request r) {
			Sinks.One<RoomResult> sink = Sinks.one();
			open.put(r.room(), sink);
			started.add(r.room());
			starts.add(r.room());
			maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
			return sink.asMono().doOnNext(x -> inFlight.decrementAndGet());
		}

		void succeed(long room) {
			open.remove(room).tryEmitValue(new RoomResult(room, 1, 100, 1_000_000, null));
		}

		void fail(long room) {
			open.remove(room).tryEmitValue(new RoomResult(room, 1, 0, 1_000_000, "Lost connection"));
		}
	}

	private static List<Workload.Request> requests(int... pages) {
		List<Workload.Request> list = new ArrayList<>();
		for (int i = 0; i < pages.length; i++) {
			list.add(new Workload.Request(i, pages[i] * 16, pages[i]));
		}
		return list;
	}

	private static void awaitStarted(Rooms rooms, int count) throws InterruptedException {
		// Rooms start on scheduler threads: wait for the start signals, bounded.
		while (rooms.started.size() < count) {
			assertThat(rooms.starts.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).as("room start").isNotNull();
		}
	}

	@Test
	void keepsAtMostConcurrencyRoomsInFlightAndRunsThemAll() throws InterruptedException {
		Rooms rooms = new Rooms();
		List<RoomResult> seen = new CopyOnWriteArrayList<>();
		BatchRunner runner = new BatchRunner(requests(1, 1, 1, 1, 1), 2, 100, false, rooms::run, seen::add);
		StepVerifier.create(runner.run())
				.then(() -> awaitQuietly(rooms, 2))
				.then(() -> {
					assertThat(rooms.started).containsExactly(0L, 1L);
					rooms.succeed(0);
				})
				.then(() -> awaitQuietly(rooms, 3))
				.then(() -> {
					rooms.succeed(1);
					awaitQuietly(rooms, 4);
					rooms.succeed(2);
					awaitQuietly(rooms, 5);
					rooms.succeed(3);
					rooms.succeed(4);
				})
				.assertNext(o -> {
					assertThat(o.results()).hasSize(5).allMatch(RoomResult::ok);
					assertThat(o.skipped()).isZero();
					assertThat(o.elapsedNanos()).isPositive();
				})
				.expectComplete()
				.verify(TIMEOUT);
		assertThat(rooms.maxInFlight.get()).isEqualTo(2);
		assertThat(seen).hasSize(5);
	}

	@Test
	void admitsARoomOnlyWhenItsPagesFitButRunsAnOversizedOneAlone() {
		Rooms rooms = new Rooms();
		BatchRunner runner = new BatchRunner(requests(6, 5, 20, 1), 4, 10, false, rooms::run, r -> { });
		StepVerifier.create(runner.run())
				.then(() -> awaitQuietly(rooms, 1))
				.then(() -> {
					// 6 + 5 pages exceed the pool of 10: the second waits.
					assertThat(rooms.started).containsExactly(0L);
					rooms.succeed(0);
					awaitQuietly(rooms, 2);
					rooms.succeed(1);
					// 20 pages never fit: it runs once nothing else holds pages, alone.
					awaitQuietly(rooms, 3);
					assertThat(rooms.started).containsExactly(0L, 1L, 2L);
					rooms.succeed(2);
					awaitQuietly(rooms, 4);
					rooms.succeed(3);
				})
				.assertNext(o -> assertThat(o.results()).hasSize(4))
				.expectComplete()
				.verify(TIMEOUT);
		assertThat(rooms.maxInFlight.get()).isEqualTo(1);
	}

	@Test
	void stopsStartingRoomsAfterAFailureWhenAskedAndCountsTheRestAsSkipped() {
		Rooms rooms = new Rooms();
		BlockingQueue<RoomResult> ended = new LinkedBlockingQueue<>();
		BatchRunner runner = new BatchRunner(requests(1, 1, 1, 1, 1, 1), 2, 100, true, rooms::run, ended::add);
		StepVerifier.create(runner.run())
				.then(() -> awaitQuietly(rooms, 2))
				.then(() -> {
					rooms.fail(0);
					// The failure must reach the runner before room 1 ends, or room 1's end would start room 2:
					// a room's result may arrive on a scheduler thread, after the test moved on.
					assertThat(poll(ended)).extracting(RoomResult::room).isEqualTo(0L);
					rooms.succeed(1);
				})
				.assertNext(o -> {
					assertThat(o.results()).hasSize(2);
					assertThat(o.results()).filteredOn(r -> !r.ok()).hasSize(1);
					assertThat(o.skipped()).isEqualTo(4);
				})
				.expectComplete()
				.verify(TIMEOUT);
		assertThat(rooms.started).hasSize(2);
	}

	@Test
	void aFailedRoomKeepsItsPagesHeldUnlessTheRunnerFreedThem() {
		// Rooms of 5 pages in a pool of 10: two at once. Room 0 fails while room 1 still runs.
		for (boolean freed : new boolean[] { false, true }) {
			Rooms rooms = new Rooms();
			BlockingQueue<RoomResult> ended = new LinkedBlockingQueue<>();
			BatchRunner runner = new BatchRunner(requests(5, 5, 5), 2, 10, false, freed, rooms::run, ended::add);
			StepVerifier.create(runner.run())
					.then(() -> awaitQuietly(rooms, 2))
					.then(() -> {
						rooms.fail(0);
						assertThat(poll(ended)).extracting(RoomResult::room).isEqualTo(0L);
						if (freed) {
							// Its pages came back: room 2 fits beside room 1, as after a prefill restart with
							// --keep-going the batch keeps its concurrency.
							awaitQuietly(rooms, 3);
							assertThat(rooms.open).containsOnlyKeys(1L, 2L);
						}
						else {
							// Still fenced: room 2 waits for room 1.
							assertThat(rooms.started).containsExactly(0L, 1L);
						}
						rooms.succeed(1);
						awaitQuietly(rooms, 3);
						rooms.succeed(2);
					})
					.assertNext(o -> assertThat(o.results()).hasSize(3))
					.expectComplete()
					.verify(TIMEOUT);
			assertThat(rooms.maxInFlight.get()).as("failed rooms freed: " + freed).isEqualTo(2);
		}
	}

	@Test
	void aRunnerErrorBecomesAFailedResult() {
		BatchRunner runner = new BatchRunner(requests(1), 1, 10, false,
				r -> Mono.error(new IllegalStateException("boom")), r -> { });
		StepVerifier.create(runner.run())
				.assertNext(o -> assertThat(o.results()).singleElement()
						.satisfies(r -> assertThat(r.failure()).contains("boom")))
				.expectComplete()
				.verify(TIMEOUT);
	}

	@Test
	void roomsTheRunnerTurnsAwayCountAsSkippedAndFreeTheirPlace() {
		// Odd rooms are turned away (empty): each frees its slot and pages, and the batch still ends.
		BatchRunner runner = new BatchRunner(requests(1, 1, 1, 1, 1), 1, 1, false,
				r -> r.room() % 2 == 1 ? Mono.empty() : Mono.just(new RoomResult(r.room(), r.pages(), 1, 1, null)),
				r -> { });
		StepVerifier.create(runner.run())
				.assertNext(o -> {
					assertThat(o.results()).extracting(RoomResult::room).containsExactly(0L, 2L, 4L);
					assertThat(o.skipped()).isEqualTo(2);
				})
				.expectComplete()
				.verify(TIMEOUT);
	}

	private static RoomResult poll(BlockingQueue<RoomResult> ended) {
		try {
			return ended.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(e);
		}
	}

	private static void awaitQuietly(Rooms rooms, int count) {
		try {
			awaitStarted(rooms, count);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(e);
		}
	}
}
