package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class KVStatsTest {

	@Test
	void sortsEngineReasonsIntoFewCategories() {
		assertThat(KVStats.failureCategory("Request 3 timed out after 300s in KVPoll.WAITING_FOR_INPUT"))
				.isEqualTo("timeout");
		assertThat(KVStats.failureCategory("Aborted by decode 10.0.0.1:5: client went away")).isEqualTo("aborted");
		assertThat(KVStats.failureCategory("Lost connection with prefill rank 10.0.0.2:7: no heartbeat"))
				.isEqualTo("connection_lost");
		assertThat(KVStats.failureCategory("Could not bootstrap room 3 from h:1: prefill rank x rejected decode y: "
				+ "KV cache dtype mismatch")).isEqualTo("incompatible");
		assertThat(KVStats.failureCategory("Could not bootstrap room 3 from h:1: 503")).isEqualTo("bootstrap");
		assertThat(KVStats.failureCategory("Prefill rank 1.2.3.4:5 failed room 3: boom")).isEqualTo("peer_failed");
		assertThat(KVStats.failureCategory("KV manager decode-dp0 was closed")).isEqualTo("closed");
		assertThat(KVStats.failureCategory("whatever")).isEqualTo("other");
		assertThat(KVStats.failureCategory(null)).isEqualTo("other");
	}
}
