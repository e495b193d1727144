package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.test.LedgerScenario;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Decode's verdict against the byte model over real loopback TCP: rooms of random writes from a peer whose Success
 * always matches what it sent, so only decode's ledger decides.
 */
class NettyLedgerScenarioTest {

	// System property kvferry.ledgerRooms raises the count.
	private static final int ROOMS = Integer.getInteger("kvferry.ledgerRooms", 1_500);

	private final List<NettyKVTransport> transports = new ArrayList<>();

	@AfterEach
	void close() {
		transports.forEach(t -> t.disposeNow(Duration.ofSeconds(10)));
	}

	@Test
	void decodeAgreesWithTheModelOnEveryRoom() {
		try (LedgerScenario scenario = new LedgerScenario(() -> {
			NettyKVTransport t = NettyKVTransport.create().eventLoopThreads(1);
			transports.add(t);
			return t;
		})) {
			LedgerScenario.Outcome outcome = scenario.run(ROOMS, 11);
			assertThat(outcome.disagreements()).isEmpty();
			assertThat(outcome.successes()).isGreaterThan(ROOMS / 5);
			assertThat(outcome.failures()).isGreaterThan(ROOMS / 5);
		}
	}
}
