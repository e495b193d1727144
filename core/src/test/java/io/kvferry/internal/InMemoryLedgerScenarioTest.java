package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvferry.test.LedgerScenario;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;

/** Decode's verdict against the byte model, rooms of random writes from a peer, on the in-memory transport. */
class InMemoryLedgerScenarioTest {

	// System property kvferry.ledgerRooms raises the count.
	private static final int ROOMS = Integer.getInteger("kvferry.ledgerRooms", 3_000);

	@Test
	void decodeAgreesWithTheModelOnEveryRoom() {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		try (LedgerScenario scenario = new LedgerScenario(() -> transport)) {
			LedgerScenario.Outcome outcome = scenario.run(ROOMS, 7);
			assertThat(outcome.disagreements()).isEmpty();
			// Both outcomes are common: a verdict that always failed (or always succeeded) would show here.
			assertThat(outcome.successes()).isGreaterThan(ROOMS / 5);
			assertThat(outcome.failures()).isGreaterThan(ROOMS / 5);
		}
	}
}
