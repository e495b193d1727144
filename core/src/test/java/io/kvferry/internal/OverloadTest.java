package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.SplittableRandom;

import io.kvferry.KVManagerSpec;
import io.kvferry.spi.KVMessage;
import io.kvferry.test.InMemoryPair;
import io.kvferry.test.OverloadScenarios;
import org.junit.jupiter.api.Test;

/**
 * Overload over the in-memory transport, and the refusal text: a room over a bound fails at once on both sides with
 * a retry hint; the hint is written so that a peer that knows no hint still reads an overload, and read without
 * trusting the peer.
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
	void theRefusalTextStartsAsAnOlderPeerReadsItAndCarriesTheHint() {
		String text = Overload.reason(Duration.ofMillis(250), "room 7 refused: full");
		assertThat(text).isEqualTo("overloaded: retry-after-ms=250; room 7 refused: full");
		assertThat(text).startsWith(KVMessage.OVERLOADED);
		assertThat(Overload.retryAfter(text)).isEqualTo(Duration.ofMillis(250));
		assertThat(Overload.retryAfter("overloaded: room 7 refused")).as("an older peer's refusal").isNull();
		assertThat(Overload.is("overloaded: room 7 refused")).isTrue();
		assertThat(Overload.retryAfter("Aborted: retry-after-ms=5; x")).isNull();
		assertThat(Overload.retryAfter("overloaded: retry-after-ms=; x")).isNull();
		assertThat(Overload.retryAfter("overloaded: retry-after-ms=12")).as("no end").isNull();
		assertThat(Overload.retryAfter("overloaded: retry-after-ms=-3; x")).isNull();
		assertThat(Overload.retryAfter("overloaded: retry-after-ms=99999999999; x")).as("too many digits").isNull();
		assertThat(Overload.retryAfter("overloaded: retry-after-ms=9999999999; x")).as("capped")
				.isEqualTo(Overload.MAX_RETRY_AFTER);
		assertThat(Overload.reason(Duration.ofHours(2), "x")).isEqualTo("overloaded: retry-after-ms=300000; x");
	}

	/** Whatever a peer writes, reading it never throws and never gives a hint out of bounds. */
	@Test
	void readingAnyTextIsSafeAndBounded() {
		SplittableRandom random = new SplittableRandom(26);
		String alphabet = "0123456789;=- retry-afterms:overloaded\u0000\u00e9";
		for (int i = 0; i < 200_000; i++) {
			StringBuilder b = new StringBuilder();
			int kind = random.nextInt(3);
			if (kind > 0) {
				b.append(KVMessage.OVERLOADED);
			}
			if (kind > 1) {
				b.append(KVMessage.RETRY_AFTER_MS);
			}
			int n = random.nextInt(24);
			for (int c = 0; c < n; c++) {
				b.append(alphabet.charAt(random.nextInt(alphabet.length())));
			}
			String text = b.toString();
			Duration hint = Overload.retryAfter(text);
			if (hint != null) {
				assertThat(text).startsWith(KVMessage.OVERLOADED + KVMessage.RETRY_AFTER_MS);
				assertThat(hint).isBetween(Duration.ZERO, Overload.MAX_RETRY_AFTER);
				String digits = text.substring((KVMessage.OVERLOADED + KVMessage.RETRY_AFTER_MS).length(),
						text.indexOf(';'));
				assertThat(hint.toMillis()).isEqualTo(Math.min(Long.parseLong(digits),
						Overload.MAX_RETRY_AFTER.toMillis()));
			}
			long ms = random.nextLong(0, Overload.MAX_RETRY_AFTER.toMillis() + 1);
			assertThat(Overload.retryAfter(Overload.reason(Duration.ofMillis(ms), text)))
					.isEqualTo(Duration.ofMillis(ms));
		}
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
