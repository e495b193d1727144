package io.kvferry.cli;

import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.harness.RoomResult;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class SummaryTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final String LOST = "Lost connection with prefill rank 127.0.0.1:1";

	private static RoomResult ok(long room, long bytes, long millis) {
		return new RoomResult(room, 2, bytes, millis * 1_000_000, null);
	}

	@Test
	void countsBytesThroughputAndLatencyOfVerifiedRooms() throws Exception {
		BatchRunner.Outcome outcome = new BatchRunner.Outcome(List.of(ok(1, 1_000_000_000, 10), ok(2, 1_000_000_000,
				20), ok(3, 2_000_000_000, 40)), 0, 2_000_000_000L);
		Summary s = Summary.of("test", 3, outcome);
		assertThat(s.verified()).isTrue();
		JsonNode j = JSON.readTree(s.toJson());
		assertThat(j.get("requests").asInt()).isEqualTo(3);
		assertThat(j.get("completed").asInt()).isEqualTo(3);
		assertThat(j.get("failures").asInt()).isZero();
		assertThat(j.get("pages").asLong()).isEqualTo(6);
		assertThat(j.get("bytes").asLong()).isEqualTo(4_000_000_000L);
		assertThat(j.get("gbps").asDouble()).isEqualTo(2.0);
		assertThat(j.get("p50_ms").asDouble()).isBetween(19.9, 20.1);
		assertThat(j.get("p99_ms").asDouble()).isBetween(39.9, 40.1);
		assertThat(j.get("max_ms").asDouble()).isBetween(39.9, 40.1);
		assertThat(j.get("verified").asBoolean()).isTrue();
		assertThat(s.table()).contains("3 of 3 verified").contains("2.00 GB/s").contains("OK: every byte matched");
	}

	@Test
	void aFailureOrAnUnrunRequestMeansNotVerifiedAndSameReasonsOfDifferentRoomsAreCountedOnce() throws Exception {
		BatchRunner.Outcome outcome = new BatchRunner.Outcome(List.of(ok(1, 100, 1),
				new RoomResult(2, 1, 0, 0, "KVTransferError(bootstrap_room=2): " + LOST),
				new RoomResult(3, 1, 0, 0, "KVTransferError(bootstrap_room=3): " + LOST)), 2, 1_000);
		Summary s = Summary.of("test", 5, outcome);
		assertThat(s.verified()).isFalse();
		assertThat(s.failures()).isEqualTo(2);
		assertThat(s.reasons()).containsExactly("2 rooms: " + LOST);
		JsonNode j = JSON.readTree(s.toJson());
		assertThat(j.get("verified").asBoolean()).isFalse();
		assertThat(j.get("skipped").asInt()).isEqualTo(2);
		assertThat(j.get("failure_reasons").get(0).asText()).contains("Lost connection");
		assertThat(s.table()).contains("2 failed").contains("2 not run").contains("FAILED");
	}

	@Test
	void reasonsThatDifferOnlyByRoomIdAreGrouped() {
		BatchRunner.Outcome outcome = new BatchRunner.Outcome(List.of(
				new RoomResult(7, 1, 0, 0, "Could not bootstrap room 7 from 127.0.0.1:2: Connection refused"),
				new RoomResult(-8, 1, 0, 0, "Could not bootstrap room -8 from 127.0.0.1:2: Connection refused"),
				new RoomResult(9, 1, 0, 0, "Prefill rank 127.0.0.1:3 failed room 9: bad page 12")), 0, 1_000);
		assertThat(Summary.of("test", 3, outcome).reasons()).containsExactly(
				"2 rooms: Could not bootstrap room N from 127.0.0.1:2: Connection refused",
				"Prefill rank 127.0.0.1:3 failed room N: bad page 12");
	}

	@Test
	void anEmptyOutcomeIsNotVerified() {
		Summary s = Summary.of("test", 1, new BatchRunner.Outcome(List.of(), 1, 0));
		assertThat(s.verified()).isFalse();
		assertThat(s.gbps()).isZero();
	}
}
