package io.kvferry.cli;

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
	void twoStreamsWithLowWaterMarkMoveEveryByteInOrderAndLeaveTheMarkAtOne() throws Exception {
		assertThat(RcvLowat.unavailable()).as("SO_RCVLOWAT on this machine").isNull();
		int size = 5 * TcpBaseline.WRITE_SIZE + 4321;
		ByteBuffer src = ByteBuffer.allocateDirect(size);
		TcpBaseline.fill(src, 42);
		ByteBuffer dst = ByteBuffer.allocateDirect(size);
		try (TcpBaseline a = TcpBaseline.open(); TcpBaseline b = TcpBaseline.open()) {
			// A small, fixed receive buffer: the mark stays below what it holds (above it, this kernel wakes the
			// reader only under memory pressure: 2-3 times slower here).
			for (TcpBaseline t : new TcpBaseline[] { a, b }) {
				t.receiveBuffer(64 << 10);
			}
			TcpBaseline[] two = { a, b };
			assertThat(TcpBaseline.pump(two, src, dst, true)).isPositive();
			assertThat(dst.duplicate().clear()).isEqualTo(src.duplicate().clear());
			assertThat(a.lowWaterMark()).isEqualTo(1);
			// Many ends of stream, where what is left is shorter than the mark asked for before.
			for (int i = 0; i < 20; i++) {
				TcpBaseline.fill(src, 43 + i);
				assertThat(TcpBaseline.pump(two, src, dst, true)).isPositive();
			}
		}
		assertThat(dst.duplicate().clear()).isEqualTo(src.duplicate().clear());
		assertThat(src.getLong(0)).isNotZero();
	}

	@Test
	void ringMovesTheAskedBytesThroughOneHotBuffer() throws Exception {
		ByteBuffer hot = ByteBuffer.allocateDirect(TcpBaseline.WRITE_SIZE);
		TcpBaseline.fill(hot, 7);
		ByteBuffer in = ByteBuffer.allocateDirect(TcpBaseline.WRITE_SIZE);
		try (TcpBaseline tcp = TcpBaseline.open()) {
			assertThat(tcp.ring(hot, in, 3L * TcpBaseline.WRITE_SIZE + 99)).isPositive();
			// The last pass moved 99 bytes into the start of the buffer, the rest is the pass before.
			assertThat(in.duplicate().clear()).isEqualTo(hot.duplicate().clear());
		}
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
