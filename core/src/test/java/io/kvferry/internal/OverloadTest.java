package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import io.kvferry.KVManagerSpec;
import io.kvferry.spi.KVMessage;
import io.kvferry.test.InMemoryPair;
import io.kvferry.test.OverloadScenarios;
import org.junit.jupiter.api.Test;

/**
 * Overload over the in-memory transport, and the refusal text: a room over a bound fails at once on both sides with
 * a retry hint, which travels in the message's own field (the words only repeat it for a reader).
 */
class OverloadTest {

	private static final OverloadScenarios.Starter IN_MEMORY = (p, d) -> {
		InMemoryPair pair = InMemoryPair.start(OverloadScenarios.SHAPE, OverloadScenarios.PAGES, p, d);
		return new OverloadScenarios.Managers(pair.prefill, pair.decode, pair.prefillMemory, pair.decodeMemory,
				InMemoryPair.BOOTSTRAP, pair);
	};

	@Test
	void decodeRefusesARoomOverItsBoundPerPrefillRankAtOnceOnBothSides() throws Exception {
		OverloadScenarios.decodeBoundPerPrefillRank(IN_MEMORY);
	}

	@Test
	void decodeRefusesARoomOverItsBoundInAllAtOnceOnBothSides() throws Exception {
		OverloadScenarios.decodeBoundInAll(IN_MEMORY);
	}

	@Test
	void prefillRefusalCarriesItsHintToDecode() throws Exception {
		OverloadScenarios.prefillRefusalCarriesItsHint(IN_MEMORY);
	}

	@Test
	void theRefusalTextNamesTheHintAndTheHintTravelsInWholeMillisecondsWithinItsBound() {
		assertThat(Overload.reason(Duration.ofMillis(250), "room 7 refused: full"))
				.isEqualTo("overloaded, retry after 250 ms: room 7 refused: full");
		assertThat(Overload.reason(Duration.ofHours(2), "x")).isEqualTo("overloaded, retry after 300000 ms: x");
		assertThat(Overload.millis(Duration.ofMillis(250))).isEqualTo(250);
		assertThat(Overload.millis(Duration.ofHours(2))).isEqualTo(KVMessage.MAX_RETRY_AFTER_MILLIS);
		assertThat(Overload.millis(Duration.ofMillis(-5))).isZero();
	}

	@Test
	void theHintIsTheConfiguredOneUntilRoomsSucceedThenTheirMeanLifetimeWithinBounds() {
		RetryAfter r = new RetryAfter(Duration.ofMillis(800));
		assertThat(r.hint()).isEqualTo(Duration.ofMillis(800));
		r.succeeded(Duration.ofMillis(80).toNanos());
		assertThat(r.hint()).isEqualTo(Duration.ofMillis(80));
		r.succeeded(Duration.ofMillis(160).toNanos());
		assertThat(r.hint()).isEqualTo(Duration.ofMillis(90));
		for (int i = 0; i < 100; i++) {
			r.succeeded(Duration.ofSeconds(30).toNanos());
		}
		assertThat(r.hint()).as("capped by the configured hint").isEqualTo(Duration.ofMillis(800));
		RetryAfter fast = new RetryAfter(Duration.ofMillis(800));
		fast.succeeded(1_000);
		assertThat(fast.hint()).as("never zero").isEqualTo(Duration.ofMillis(1));
	}

	@Test
	void boundsAreChecked() {
		assertThatThrownBy(() -> KVManagerSpec.decode().maxRooms(4, 2))
				.hasMessage("maxRooms : 4 per prefill rank, 2 in all (expected: 1 <= perPeer <= total)");
		assertThatThrownBy(() -> KVManagerSpec.decode().overloadRetryAfter(Duration.ZERO))
				.hasMessage("overloadRetryAfter : PT0S (expected: > 0 and <= 5 min)");
	}
}
