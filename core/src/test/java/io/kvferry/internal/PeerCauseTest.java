package io.kvferry.internal;

import io.kvferry.test.PeerCauseScenario;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;

/**
 * Over the in-memory transport, decode fails a room with the cause its prefill rank's status names in its failure
 * code (overload with its hint, lease expiry, requeue, drain, protocol errors apart), never by the reason's words.
 */
class PeerCauseTest {

	@Test
	void everyCodeArrivesAsItsCause() {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		try (PeerCauseScenario scenario = new PeerCauseScenario(() -> transport)) {
			scenario.everyCodeArrivesAsItsCause();
		}
	}

	@Test
	void theReasonsWordsAreNotRead() {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		try (PeerCauseScenario scenario = new PeerCauseScenario(() -> transport)) {
			scenario.theReasonsWordsAreNotRead();
		}
	}
}
