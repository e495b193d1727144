package io.kvferry.examples;

import java.nio.ByteBuffer;
import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

@Timeout(30)
class TcpBaselineTest {

	private static ByteBuffer pattern(int size) {
		ByteBuffer b = ByteBuffer.allocateDirect(size);
		for (int i = 0; i < size; i++) {
			b.put(i, (byte) (i * 31 + 7));
		}
		return b;
	}

	@Test
	void pumpMovesEveryByteInOrder() throws Exception {
		int size = 3 * TcpBaseline.WRITE_SIZE + 12345;
		ByteBuffer src = pattern(size);
		ByteBuffer dst = ByteBuffer.allocateDirect(size);
		try (TcpBaseline tcp = TcpBaseline.open()) {
			assertThat(tcp.pump(src, dst)).isPositive();
			assertThat(tcp.pump(src, dst)).isPositive();
		}
		assertThat(dst.duplicate().clear()).isEqualTo(src.duplicate().clear());
	}

	@Test
	void pingPongAnswersEveryRequestWithThePayload() throws Exception {
		int payload = TcpBaseline.WRITE_SIZE + 100;
		ByteBuffer src = pattern(payload + 50);
		ByteBuffer dst = ByteBuffer.allocateDirect(payload + 50);
		long[] rtt;
		try (TcpBaseline tcp = TcpBaseline.open()) {
			rtt = tcp.pingPong(src, dst, payload, 5);
		}
		assertThat(rtt).hasSize(5);
		assertThat(Arrays.stream(rtt).min().orElse(0)).isPositive();
		assertThat(dst.duplicate().clear().limit(payload)).isEqualTo(src.duplicate().clear().limit(payload));
		assertThat(dst.get(payload)).isZero();
		assertThat(TcpBaseline.median(new long[] { 5, 1, 3 })).isEqualTo(3);
	}
}
