package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.Test;

class RoomPhasesTest {

	@Test
	void absentPhasesAreMarkedAndLeftOutOfTheTotal() {
		RoomPhases p = RoomPhases.ofNanos(-1, 2_000_000, 500_000, 3_000_000, -7);
		assertThat(p.bootstrap()).isEmpty();
		assertThat(p.has(RoomPhases.Phase.BOOTSTRAP)).isFalse();
		assertThat(p.nanos(RoomPhases.Phase.LANDING)).as("any negative is absent").isEqualTo(-1);
		assertThat(p.waitingForPeer()).contains(Duration.ofMillis(2));
		assertThat(p.waitingForEngine()).contains(Duration.ofNanos(500_000));
		assertThat(p.wire()).contains(Duration.ofMillis(3));
		assertThat(p.landing()).isEmpty();
		assertThat(p.total()).isEqualTo(Duration.ofNanos(5_500_000));
		assertThat(p.toString()).isEqualTo("waiting for peer 2.0 ms, waiting for engine 0.5 ms, wire 3.0 ms");
		assertThat(p).isEqualTo(RoomPhases.ofNanos(-1, 2_000_000, 500_000, 3_000_000, -1));
	}

	@Test
	void noneHasNoPhaseAndAZeroPhaseIsPresent() {
		assertThat(RoomPhases.NONE.total()).isZero();
		assertThat(RoomPhases.NONE.toString()).isEqualTo("no phases");
		for (RoomPhases.Phase phase : RoomPhases.Phase.values()) {
			assertThat(RoomPhases.NONE.duration(phase)).isEmpty();
		}
		assertThat(RoomPhases.ofNanos(0, -1, -1, -1, -1).bootstrap()).contains(Duration.ZERO);
		assertThat(RoomPhases.Phase.WAITING_FOR_PEER.tag()).isEqualTo("waiting_for_peer");
	}

	@Test
	void oneValuePerPhase() {
		assertThatThrownBy(() -> RoomPhases.ofNanos(1, 2)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("expected: 5");
	}
}
