package io.kvferry.cli;

import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.RoomPhases;
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
		assertThat(s.table()).contains("2 failed").contains("2 skipped").contains("FAILED");
	}

	@Test
	void roomsAStopSignalKeptFromStartingAreSkippedNoFailure() throws Exception {
		BatchRunner.Outcome outcome = new BatchRunner.Outcome(List.of(ok(1, 100, 1), ok(2, 100, 1)), 8, 1_000);
		Summary s = Summary.of("test", 10, outcome).stoppedBy("SIGTERM");
		assertThat(s.verified()).isTrue();
		JsonNode j = JSON.readTree(s.toJson());
		assertThat(j.get("verified").asBoolean()).isTrue();
		assertThat(j.get("skipped").asInt()).isEqualTo(8);
		assertThat(j.get("stopped_by").asText()).isEqualTo("SIGTERM");
		assertThat(s.table()).contains("2 of 10 verified, 8 skipped (stopped by SIGTERM)")
				.contains("OK: every byte of every room that ran matched").doesNotContain("FAILED", "not run");
		// A failure still fails the batch, stopped or not.
		BatchRunner.Outcome failed = new BatchRunner.Outcome(List.of(ok(1, 100, 1), new RoomResult(2, 1, 0, 0, LOST)),
				8, 1_000);
		assertThat(Summary.of("test", 10, failed).stoppedBy("SIGTERM").verified()).isFalse();
	}

	@Test
	void reasonsThatDifferOnlyByRoomIdAreGrouped() {
		BatchRunner.Outcome outcome = new BatchRunner.Outcome(List.of(
				new RoomResult(7, 1, 0, 0, "Could not bootstrap room 7 from 127.0.0.1:2: Connection refused"),
				new RoomResult(-8, 1, 0, 0, "Could not bootstrap room -8 from 127.0.0.1:2: Connection refused"),
				new RoomResult(9, 1, 0, 0, "Prefill rank 127.0.0.1:3 failed room 9: bad page 12"),
				new RoomResult(10, 1, 0, 0, "Request 10 timed out after 3s in KVPoll.BOOTSTRAPPING"),
				new RoomResult(11, 1, 0, 0, "Request 11 timed out after 3s in KVPoll.BOOTSTRAPPING")), 0, 1_000);
		assertThat(Summary.of("test", 5, outcome).reasons()).containsExactly(
				"2 rooms: Could not bootstrap room N from 127.0.0.1:2: Connection refused",
				"Prefill rank 127.0.0.1:3 failed room N: bad page 12",
				"2 rooms: Request N timed out after 3s in KVPoll.BOOTSTRAPPING");
	}

	@Test
	void phasesOfTheSucceededRoomsThatWentThroughThemArePrintedWithExactPercentilesAndRoomCounts() throws Exception {
		// Nanoseconds per phase: bootstrap, waiting for peer, waiting for engine, wire, landing; -1 absent.
		RoomPhases slow = RoomPhases.ofNanos(3_000_000, 20_000_000, -1, 4_000_000, 300_000);
		RoomPhases fast = RoomPhases.ofNanos(1_000_000, 10_000_000, -1, 2_000_000, 100_000);
		RoomPhases noLanding = RoomPhases.ofNanos(2_000_000, 30_000_000, -1, 6_000_000, -1);
		// A failed room's phases are not the batch's: its waiting_for_engine must not show.
		RoomPhases failed = RoomPhases.ofNanos(-1, 900_000_000, 5_000_000, 900_000_000, -1);
		BatchRunner.Outcome outcome = new BatchRunner.Outcome(List.of(
				new RoomResult(1, 2, 100, 30_000_000, null, slow),
				new RoomResult(2, 2, 100, 15_000_000, null, fast),
				new RoomResult(3, 2, 100, 40_000_000, null, noLanding),
				new RoomResult(4, 2, 0, 0, "Lost connection", failed),
				new RoomResult(5, 2, 100, 1_000_000, null)), 0, 1_000_000_000L);
		Summary s = Summary.of("test", 5, outcome);

		JsonNode phases = JSON.readTree(s.toJson()).get("phases");
		assertThat(phases.properties()).extracting(Map.Entry::getKey)
				.containsExactly("bootstrap", "waiting_for_peer", "wire", "landing");
		assertPhase(phases, "bootstrap", 2.0, 3.0, 3);
		assertPhase(phases, "waiting_for_peer", 20.0, 30.0, 3);
		assertPhase(phases, "wire", 4.0, 6.0, 3);
		// Two rooms: the median is the lower one (nearest rank), the 99th the higher.
		assertPhase(phases, "landing", 0.1, 0.3, 2);

		// The name column is as wide as the longest tag shown, so that the figures line up.
		assertThat(s.table()).contains(lines(
				"  latency max  40.0 ms\n"
						+ "  bootstrap        p50 2.00 ms, p99 3.00 ms, 3 rooms\n"
						+ "  waiting_for_peer p50 20.00 ms, p99 30.00 ms, 3 rooms\n"
						+ "  wire             p50 4.00 ms, p99 6.00 ms, 3 rooms\n"
						+ "  landing          p50 0.10 ms, p99 0.30 ms, 2 rooms\n"
						+ "  failures     1\n"))
				.doesNotContain("waiting_for_engine");
	}

	@Test
	void roomsWithoutPhasesGiveAnEmptyPhasesObjectAndNoPhaseLines() throws Exception {
		BatchRunner.Outcome outcome = new BatchRunner.Outcome(List.of(ok(1, 100, 10), ok(2, 100, 20)), 0, 1_000);
		Summary s = Summary.of("test", 2, outcome);
		JsonNode phases = JSON.readTree(s.toJson()).get("phases");
		assertThat(phases.isObject()).isTrue();
		assertThat(phases.isEmpty()).isTrue();
		assertThat(s.table()).contains(lines("  latency max  20.0 ms\n  failures     0\n"));
	}

	/** The table ends its lines with the platform's separator. */
	private static String lines(String text) {
		return text.replace("\n", System.lineSeparator());
	}

	private static void assertPhase(JsonNode phases, String tag, double p50, double p99, int rooms) {
		JsonNode p = phases.get(tag);
		assertThat(p.get("p50_ms").asDouble()).as(tag).isEqualTo(p50);
		assertThat(p.get("p99_ms").asDouble()).as(tag).isEqualTo(p99);
		assertThat(p.get("rooms").asInt()).as(tag).isEqualTo(rooms);
	}

	@Test
	void anEmptyOutcomeIsNotVerified() {
		Summary s = Summary.of("test", 1, new BatchRunner.Outcome(List.of(), 1, 0));
		assertThat(s.verified()).isFalse();
		assertThat(s.gbps()).isZero();
	}
}
