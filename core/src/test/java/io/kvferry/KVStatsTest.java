package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import org.junit.jupiter.api.Test;

class KVStatsTest {

	@Test
	void everyCauseIsCountedEvenWhenNoRoomFailedThatWay() {
		KVStats stats = new KVStats(1, 2, 3, 4, 1, Map.of(), Map.of(FailureCause.TIMEOUT, 1L), 0, 0);
		assertThat(stats.failures()).hasSize(FailureCause.values().length)
				.containsEntry(FailureCause.TIMEOUT, 1L).containsEntry(FailureCause.ABORTED, 0L);
		assertThat(FailureCause.CONNECTION_LOST.tag()).isEqualTo("connection_lost");
	}
}
