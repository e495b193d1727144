package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvferry.RoomPath;
import io.kvferry.RoomPhases;
import io.kvferry.RoomPhases.Phase;
import org.junit.jupiter.api.Test;

/** Phases from the marks a room reached: each runs until the next one reached, the last until the end. */
class RoomClockTest {

	@Test
	void aDecodeRoomThatSucceededHasEveryDecodePhaseAddingUpToItsDuration() {
		RoomClock clock = new RoomClock(true);
		clock.opened(RoomClock.now());
		clock.connected(RoomPath.IN_MEMORY);
		clock.firstByte();
		clock.landed();
		clock.landed();
		long end = RoomClock.now();
		RoomPhases p = clock.end(end, true);
		assertThat(p.has(Phase.BOOTSTRAP) && p.has(Phase.WAITING_FOR_PEER) && p.has(Phase.WIRE)
				&& p.has(Phase.LANDING)).as("%s", p).isTrue();
		assertThat(p.has(Phase.WAITING_FOR_ENGINE)).isFalse();
		assertThat(p.total().toNanos()).isEqualTo(end - clock.openedNanos());
		assertThat(clock.phases()).isSameAs(p);
		assertThat(clock.path()).isEqualTo(RoomPath.IN_MEMORY);
		assertThat(clock.endedNanos()).isEqualTo(end);
	}

	@Test
	void aFailedDecodeRoomsWireRunsUntilItFailedAndItHasNoLanding() {
		RoomClock clock = new RoomClock(true);
		clock.opened(RoomClock.now());
		clock.connected(RoomPath.IN_MEMORY);
		clock.firstByte();
		clock.landed();
		RoomPhases p = clock.end(RoomClock.now(), false);
		assertThat(p.has(Phase.WIRE)).isTrue();
		assertThat(p.has(Phase.LANDING)).isFalse();
	}

	@Test
	void aDecodeRoomThatFailedBootstrappingHasOnlyItsBootstrap() {
		RoomClock clock = new RoomClock(true);
		long opened = RoomClock.now();
		clock.opened(opened);
		RoomPhases p = clock.end(opened + 5_000, false);
		assertThat(p).isEqualTo(RoomPhases.ofNanos(5_000, -1, -1, -1, -1));
	}

	@Test
	void aPrefillRoomWaitsForItsPeerThenTheEngineThenIsOnTheWire() {
		RoomClock clock = new RoomClock(false);
		clock.opened(RoomClock.now());
		RoomPath tcp = new RoomPath(RoomPath.Kind.TCP, 2, false);
		clock.asked(tcp, false);
		clock.asked(new RoomPath(RoomPath.Kind.TCP, 2, true), true);
		clock.firstByte();
		RoomPhases p = clock.end(RoomClock.now(), true);
		assertThat(p.has(Phase.WAITING_FOR_PEER) && p.has(Phase.WAITING_FOR_ENGINE) && p.has(Phase.WIRE)).isTrue();
		assertThat(p.has(Phase.BOOTSTRAP) || p.has(Phase.LANDING)).isFalse();
		assertThat(clock.path()).as("what every decode rank's path shares").isEqualTo(tcp);
	}
}
