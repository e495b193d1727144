package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

class LoopPingPongTest {

	@Test
	void everyAnswerLandsWholeAndInPlaceInTheDestination() throws Exception {
		int payload = 3 * 65536 + 123;
		ByteBuffer src = source(payload + 100);
		try (LoopPingPong loop = LoopPingPong.open(src, payload)) {
			// The reads land at the bytes received so far: any other offset leaves a wrong or zero byte.
			assertRoundsLandWhole(loop, src, payload, 3);
		}
	}

	@Test
	void withAVerdictEveryRoundEndsOnceTheFarSideReadItAndOnlyTheRequestsAreAnswered() throws Exception {
		int payload = 65536 + 17;
		ByteBuffer src = source(payload);
		try (LoopPingPong loop = LoopPingPong.withVerdict(src, payload)) {
			// Were a verdict taken for a request, its answer would land in the next round's destination ahead of
			// that round's own answer, and the round would see more bytes than it asked; without the verdict the
			// round never ends, and ping says so after its timeout instead of returning.
			assertRoundsLandWhole(loop, src, payload, 5);
		}
	}

	private static ByteBuffer source(int capacity) {
		ByteBuffer src = ByteBuffer.allocateDirect(capacity);
		for (int i = 0; i < capacity; i++) {
			src.put(i, (byte) (i * 31 + 7));
		}
		return src;
	}

	/** Round trips into a zeroed destination: each lands the answer whole and nothing past it. */
	private static void assertRoundsLandWhole(LoopPingPong loop, ByteBuffer src, int payload, int rounds)
			throws Exception {
		ByteBuffer dst = ByteBuffer.allocateDirect(payload + 100);
		for (int round = 0; round < rounds; round++) {
			for (int i = 0; i < dst.capacity(); i++) {
				dst.put(i, (byte) 0);
			}
			assertThat(loop.ping(dst)).isPositive();
			assertThat(dst.duplicate().clear().limit(payload)).isEqualTo(src.duplicate().clear().limit(payload));
			for (int i = payload; i < dst.capacity(); i++) {
				assertThat(dst.get(i)).as("byte %d, past the answer", i).isZero();
			}
		}
	}

	@Test
	void aFreshPingPongServesItsFirstRoundTripEveryTime() throws Exception {
		// Its connect completes with the handshake, before the far loop accepted the connection: the listener must
		// outlive that accept, or the connection is reset before it ever carried a byte.
		ByteBuffer src = ByteBuffer.allocateDirect(4096);
		ByteBuffer dst = ByteBuffer.allocateDirect(4096);
		// Both cores kept busy, so that the far loop is often late to accept, as it was when a bench shared the machine.
		AtomicBoolean stop = new AtomicBoolean();
		List<Thread> busy = new ArrayList<>();
		for (int t = 0; t < 2; t++) {
			Thread b = new Thread(() -> {
				long x = 0;
				while (!stop.get()) {
					x += System.nanoTime() & 1;
				}
			});
			b.start();
			busy.add(b);
		}
		try {
			for (int i = 0; i < 40; i++) {
				try (LoopPingPong loop = LoopPingPong.open(src, 4096)) {
					assertThat(loop.ping(dst)).isPositive();
				}
			}
		}
		finally {
			stop.set(true);
			for (Thread b : busy) {
				b.join();
			}
		}
	}
}
