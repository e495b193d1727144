package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.test.UnaskedFrames;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A prefill rank can fail only the rooms that asked it, over real loopback TCP: a frame from rank B naming rooms 5 and
 * 7, which asked only rank A, is B's fault and closes B's connection; rooms 5 and 7 succeed with A's bytes.
 */
class NettyUnaskedFramesTest {

	private final List<NettyKVTransport> transports = new ArrayList<>();

	@AfterEach
	void close() {
		transports.forEach(t -> t.disposeNow(Duration.ofSeconds(10)));
	}

	@ParameterizedTest
	@EnumSource(UnaskedFrames.Frame.class)
	void roomsAskedOfAnotherRankStillSucceed(UnaskedFrames.Frame frame) {
		try (UnaskedFrames scenario = new UnaskedFrames(() -> {
			NettyKVTransport t = NettyKVTransport.create().eventLoopThreads(1);
			transports.add(t);
			return t;
		})) {
			UnaskedFrames.Outcome outcome = scenario.run(frame);
			assertThat(outcome.room5()).isEqualTo("SUCCESS");
			assertThat(outcome.room7()).isEqualTo("SUCCESS");
			if (frame == UnaskedFrames.Frame.ABORT_ACK) {
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
