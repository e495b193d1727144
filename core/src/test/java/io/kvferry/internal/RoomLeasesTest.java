package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import reactor.test.scheduler.VirtualTimeScheduler;

/** The bookkeeping of leases, on a tick count the test moves, and the sweeper's ticks on virtual time. */
class RoomLeasesTest {

	private final AtomicLong tick = new AtomicLong();
	private final RoomLeases<String> leases = new RoomLeases<>(tick::get);

	private static List<Long> rooms(List<RoomLeases.Lease<String>> expired) {
		return expired.stream().map(l -> l.room).toList();
	}

	@Test
	void aLeaseEndsOnlyAfterAWholePeriodWithoutRenewal() {
		leases.hold(1, "a");
		leases.hold(2, "b");
		leases.hold(3, "c");
		tick.set(4);
		assertThat(leases.renew(new long[] { 1, 2, 99 })).as("the unknown room is ignored").isEqualTo(2);
		tick.set(RoomLeases.TICKS);
		assertThat(leases.expire()).as("a whole period since the request, not more").isEmpty();
		tick.set(RoomLeases.TICKS + 1);
		List<RoomLeases.Lease<String>> expired = leases.expire();
		assertThat(rooms(expired)).containsExactly(3L);
		assertThat(expired.get(0).holder).isEqualTo("c");
		assertThat(leases.expire()).as("handed out once").isEmpty();
		tick.set(4 + RoomLeases.TICKS);
		assertThat(leases.expire()).isEmpty();
		tick.set(4 + RoomLeases.TICKS + 1);
		assertThat(rooms(leases.expire())).containsExactlyInAnyOrder(1L, 2L);
		assertThat(leases.size()).isZero();
	}

	@Test
	void renewalsEveryThirdOfAPeriodKeepALeaseForever() {
		leases.hold(7, "r");
		for (int t = 1; t <= 100 * RoomLeases.TICKS; t++) {
			tick.set(t);
			if (t % (RoomLeases.TICKS / 3) == 0) {
				leases.renew(new long[] { 7 });
			}
			assertThat(leases.expire()).as("tick " + t).isEmpty();
		}
		assertThat(leases.size()).isOne();
	}

	@Test
	void aReleasedLeaseNeverExpiresAndOnlyItsHolderReleasesIt() {
		leases.hold(5, "first");
		leases.release(5, "another room of the same id");
		assertThat(leases.size()).isOne();
		leases.release(5, "first");
		assertThat(leases.size()).isZero();
		tick.set(10 * RoomLeases.TICKS);
		assertThat(leases.expire()).isEmpty();
		assertThat(leases.renew(new long[] { 5 })).as("a released room is not renewed").isZero();
	}

	@Test
	void tellsASilentRankFromOneThatForgotARoom() {
		leases.hold(1, "a");
		leases.hold(2, "b");
		assertThat(leases.sinceLastRenewal()).as("never renewed").isEqualTo(-1);
		tick.set(3);
		leases.renew(new long[] { 1 });
		tick.set(8);
		assertThat(leases.sinceLastRenewal()).isEqualTo(5);
		assertThat(leases.expire()).isEmpty();
		tick.set(RoomLeases.TICKS + 1);
		List<RoomLeases.Lease<String>> expired = leases.expire();
		assertThat(rooms(expired)).containsExactly(2L);
		assertThat(leases.since(expired.get(0))).isEqualTo(RoomLeases.TICKS + 1);
		assertThat(leases.sinceLastRenewal()).as("room 1 was renewed later than room 2").isLessThan(
				leases.since(expired.get(0)));
	}

	@Test
	void theSweeperTicksTenTimesAPeriodWithAFixedDelayUntilDisposed() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		AtomicInteger swept = new AtomicInteger();
		RoomLeases.Sweeper sweeper = new RoomLeases.Sweeper(vts, Duration.ofSeconds(3).toNanos(), () -> {
			if (swept.incrementAndGet() == 2) {
				throw new IllegalStateException("one bad sweep");
			}
		}).start();
		vts.advanceTimeBy(Duration.ofMillis(299));
		assertThat(sweeper.getAsLong()).isZero();
		vts.advanceTimeBy(Duration.ofMillis(1));
		assertThat(sweeper.getAsLong()).isOne();
		vts.advanceTimeBy(Duration.ofSeconds(3));
		assertThat(sweeper.getAsLong()).as("a failed sweep does not stop the ticks").isEqualTo(11);
		assertThat(swept.get()).isEqualTo(11);
		assertThat(sweeper.millis(RoomLeases.TICKS)).isEqualTo(3000);
		sweeper.dispose();
		vts.advanceTimeBy(Duration.ofSeconds(30));
		assertThat(sweeper.getAsLong()).isEqualTo(11);
		assertThat(sweeper.isDisposed()).isTrue();
	}
}
