package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RoomDpRankTableTest {

	private final AtomicLong now = new AtomicLong(1_000);
	private final RoomDpRankTable table = new RoomDpRankTable(Duration.ofSeconds(120), 1000, now::get);

	@Test
	void answersAnEntryUntilItsLifetimeEnds() {
		table.put(7, 2);
		assertThat(table.get(7)).isEqualTo(2);
		assertThat(table.get(8)).isNull();
		now.addAndGet(Duration.ofSeconds(120).toNanos() - 1);
		assertThat(table.get(7)).isEqualTo(2);
		now.addAndGet(1);
		assertThat(table.get(7)).isNull();
	}

	@Test
	void rewritingARoomRefreshesIt() {
		table.put(7, 2);
		now.addAndGet(Duration.ofSeconds(100).toNanos());
		table.put(7, 3);
		now.addAndGet(Duration.ofSeconds(100).toNanos());
		assertThat(table.get(7)).isEqualTo(3);
	}

	@Test
	void sweepRemovesOnlyExpiredEntries() {
		table.put(1, 0);
		now.addAndGet(Duration.ofSeconds(60).toNanos());
		table.put(2, 1);
		now.addAndGet(Duration.ofSeconds(60).toNanos());
		assertThat(table.size()).isEqualTo(2);
		assertThat(table.sweep()).isEqualTo(1);
		assertThat(table.get(2)).isEqualTo(1);
		now.addAndGet(Duration.ofSeconds(60).toNanos());
		assertThat(table.sweep()).isZero();
		assertThat(table.size()).isZero();
	}

	@Test
	void refusesANewRoomWhenFullAndStillAnswersAndRewritesHeldRooms() {
		RoomDpRankTable small = new RoomDpRankTable(Duration.ofSeconds(120), 3, now::get);
		assertThat(small.put(1, 0)).isTrue();
		assertThat(small.put(2, 1)).isTrue();
		assertThat(small.put(3, 2)).isTrue();

		assertThat(small.put(4, 0)).isFalse();
		assertThat(small.get(4)).isNull();
		assertThat(small.size()).isEqualTo(3);
		assertThat(small.refusedCount()).isEqualTo(1);

		assertThat(small.put(2, 7)).as("rewriting a held room").isTrue();
		assertThat(small.get(1)).isEqualTo(0);
		assertThat(small.get(2)).isEqualTo(7);
		assertThat(small.get(3)).isEqualTo(2);
		assertThat(small.size()).isEqualTo(3);
		assertThat(small.refusedCount()).isEqualTo(1);
	}

	@Test
	void aFullTableSweepsExpiredEntriesBeforeRefusingAtMostOncePerInterval() {
		RoomDpRankTable small = new RoomDpRankTable(Duration.ofMillis(500), 2, now::get);
		small.put(1, 0);
		small.put(2, 0);
		now.addAndGet(Duration.ofMillis(100).toNanos());
		// Full of live entries: this write sweeps (nothing to remove) and is refused.
		assertThat(small.put(3, 0)).isFalse();
		now.addAndGet(Duration.ofMillis(600).toNanos());
		// Both entries expired, but the last sweep is only 600 ms old: no second sweep yet.
		assertThat(small.put(3, 0)).isFalse();
		assertThat(small.size()).isEqualTo(2);
		now.addAndGet(Duration.ofMillis(RoomDpRankTable.SWEEP_ON_FULL_INTERVAL_MILLIS - 600).toNanos());
		assertThat(small.put(3, 0)).isTrue();
		assertThat(small.get(3)).isEqualTo(0);
		assertThat(small.size()).isEqualTo(1);
		assertThat(small.refusedCount()).isEqualTo(2);
	}

	@Test
	void neverHoldsMoreThanTheCapUnderConcurrentWrites() throws InterruptedException {
		// Many small races at the cap rather than one big one: every round, the writers meet at a barrier and fill a
		// fresh table together, so that writes cross the cap at the same moment a thousand times.
		int cap = 4;
		int writers = 4;
		int roomsPerWriter = 8;
		int rounds = 1000;
		List<RoomDpRankTable> tables = new ArrayList<>();
		List<AtomicInteger> stored = new ArrayList<>();
		for (int r = 0; r < rounds; r++) {
			tables.add(new RoomDpRankTable(Duration.ofSeconds(120), cap, System::nanoTime));
			stored.add(new AtomicInteger());
		}
		CyclicBarrier together = new CyclicBarrier(writers);
		List<Thread> threads = new ArrayList<>();
		for (int w = 0; w < writers; w++) {
			long first = (long) w * roomsPerWriter;
			threads.add(new Thread(() -> {
				for (int r = 0; r < rounds; r++) {
					if (!await(together)) {
						return;
					}
					for (long room = first; room < first + roomsPerWriter; room++) {
						if (tables.get(r).put(room, 0)) {
							stored.get(r).incrementAndGet();
						}
					}
				}
			}, "writer-" + w));
		}
		threads.forEach(Thread::start);
		for (Thread thread : threads) {
			thread.join(TimeUnit.SECONDS.toMillis(60));
			assertThat(thread.isAlive()).as(thread.getName() + " finished").isFalse();
		}
		for (int r = 0; r < rounds; r++) {
			assertThat(stored.get(r).get()).as("rooms stored in round " + r).isEqualTo(cap);
			assertThat(tables.get(r).size()).as("rooms held in round " + r).isEqualTo(cap);
			assertThat(tables.get(r).refusedCount()).isEqualTo((long) writers * roomsPerWriter - cap);
		}
	}

	@Test
	void rejectsANonPositiveLifetimeOrCap() {
		assertThatThrownBy(() -> new RoomDpRankTable(Duration.ZERO, 1, now::get)).hasMessageStartingWith("lifetime : ");
		assertThatThrownBy(() -> new RoomDpRankTable(Duration.ofSeconds(1), 0, now::get))
				.hasMessage("maxDpRankEntries : 0 (expected: >= 1)");
	}

	/** @return whether every writer arrived; false when the barrier broke (a writer failed or was interrupted) */
	private static boolean await(CyclicBarrier barrier) {
		try {
			barrier.await(30, TimeUnit.SECONDS);
			return true;
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			return false;
		}
		catch (BrokenBarrierException | TimeoutException e) {
			return false;
		}
	}
}
