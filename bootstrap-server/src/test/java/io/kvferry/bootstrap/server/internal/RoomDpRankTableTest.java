package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RoomDpRankTableTest {

	private final AtomicLong now = new AtomicLong(1_000);
	private final RoomDpRankTable table = new RoomDpRankTable(Duration.ofSeconds(120), now::get);

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
	}

	@Test
	void rejectsANonPositiveLifetime() {
		assertThatThrownBy(() -> new RoomDpRankTable(Duration.ZERO, now::get)).hasMessageStartingWith("lifetime : ");
	}
}
