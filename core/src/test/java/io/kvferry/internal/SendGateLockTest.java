package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A room's gate is asked on a transport thread before every frame, while the engine's thread may hold the room's
 * monitor across a whole chunk: the gate must answer without that monitor, and still close once the room ended.
 */
class SendGateLockTest {

	private static final long T = 5;

	@Test
	void theGateAnswersWhileTheEngineHoldsTheRoomsMonitor() throws Exception {
		RoomTable<Room> table = new RoomTable<>("test", VirtualTimeScheduler.create(), Schedulers.immediate(),
				Duration.ofSeconds(300), Duration.ofSeconds(200), Duration.ofSeconds(100), 16, (r, s) -> { }, r -> { });
		Room room = table.getOrCreate(7, n -> new Room(n, table));
		assertThat(room.isLive()).as("an unknown state is no live room").isFalse();
		table.advance(room, KVPoll.TRANSFERRING);
		CountDownLatch held = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		Thread engine = new Thread(() -> {
			synchronized (room) {
				held.countDown();
				try {
					release.await(T, TimeUnit.SECONDS);
				}
				catch (InterruptedException e) {
					Thread.currentThread().interrupt();
				}
			}
		}, "engine");
		engine.start();
		try {
			assertThat(held.await(T, TimeUnit.SECONDS)).isTrue();
			// The transport's question, on another thread, while the engine still holds the monitor.
			CompletableFuture<Boolean> open = CompletableFuture.supplyAsync(room::isLive);
			assertThat(open.get(T, TimeUnit.SECONDS)).as("answered without the room's monitor").isTrue();
			assertThat(release.getCount()).as("the engine still held the monitor").isEqualTo(1);
		}
		finally {
			release.countDown();
			engine.join(TimeUnit.SECONDS.toMillis(T));
		}
		table.fail(room, FailureCause.ABORTED, "stopped", false);
		assertThat(room.isLive()).as("an ended room's gate is closed").isFalse();
	}
}
