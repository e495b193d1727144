package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvferry.test.UnaskedFrames;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A prefill rank can fail only the rooms that asked it: a frame from rank B naming rooms 5 and 7, which asked only rank
 * A, is B's fault. Over the in-memory transport; the same scenario runs over TCP in transport-netty.
 */
class UnaskedFramesTest {

	@ParameterizedTest
	@EnumSource(UnaskedFrames.Frame.class)
	void roomsAskedOfAnotherRankStillSucceed(UnaskedFrames.Frame frame) {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		try (UnaskedFrames scenario = new UnaskedFrames(() -> transport)) {
			UnaskedFrames.Outcome outcome = scenario.run(frame);
			assertThat(outcome.room5()).isEqualTo("SUCCESS");
			assertThat(outcome.room7()).isEqualTo("SUCCESS");
			if (frame == UnaskedFrames.Frame.ABORT_ACK) {
				// Answers nothing of this rank's: let pass, and B's own report on room 6 came after it.
				assertThat(outcome.room6()).startsWith("PEER_FAILED").contains("rogue rank B gives up room 6");
			}
			else {
				assertThat(outcome.room6()).startsWith("PROTOCOL: Room 6 was asked of a rank cut off for breaking the "
						+ "protocol: prefill rank ").contains(", which decode did not ask it for")
						.contains(frame == UnaskedFrames.Frame.FENCE ? "room 7" : "room 5");
			}
		}
	}
}
