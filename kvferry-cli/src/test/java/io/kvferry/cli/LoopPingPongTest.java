package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;

import org.junit.jupiter.api.Test;

class LoopPingPongTest {

	@Test
	void everyAnswerLandsWholeAndInPlaceInTheDestination() throws Exception {
		int payload = 3 * 65536 + 123;
		ByteBuffer src = ByteBuffer.allocateDirect(payload + 100);
		for (int i = 0; i < src.capacity(); i++) {
			src.put(i, (byte) (i * 31 + 7));
		}
		ByteBuffer dst = ByteBuffer.allocateDirect(payload + 100);
		try (LoopPingPong loop = LoopPingPong.open(src, payload)) {
			for (int round = 0; round < 3; round++) {
				for (int i = 0; i < dst.capacity(); i++) {
					dst.put(i, (byte) 0);
				}
				assertThat(loop.ping(dst)).isPositive();
				// The reads land at the bytes received so far: any other offset leaves a wrong or zero byte.
				assertThat(dst.duplicate().clear().limit(payload)).isEqualTo(src.duplicate().clear().limit(payload));
				// Only the answer's bytes: nothing past it in the destination.
				for (int i = payload; i < dst.capacity(); i++) {
					assertThat(dst.get(i)).isZero();
				}
			}
		}
	}
}
