package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code RENEW} frames through the decoder on an {@link EmbeddedChannel}: the documented bytes, malformed bodies. */
class RenewFrameDecoderTest {

	/** This release's preface: RENEW is unchanged since it came, whatever the version. */
	private static final String PREFACE = "4b564652" + String.format("%04x", KVMessage.PROTOCOL_VERSION);

	private static final int MAX = 1024;

	private final KVFrameDecoderTest.Recorder recorder = new KVFrameDecoderTest.Recorder();
	private final List<ByteBuf> fed = new ArrayList<>();

	@AfterEach
	void everyInputBufferIsReleased() {
		assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).isZero());
	}

	@Test
	void renewFramesArriveFedByteByByteWithTheDocumentedBytes() {
		EmbeddedChannel v8 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			// length 21 (type + count + 2 rooms), type 0x0c, count 2, rooms 7 and -1; then an empty renewal.
			byte[] bytes = ByteBufUtil.decodeHexDump(PREFACE
					+ "00000015" + "0c" + "00000002" + "0000000000000007" + "ffffffffffffffff"
					+ "00000005" + "0c" + "00000000");
			for (byte b : bytes) {
				ByteBuf piece = Unpooled.wrappedBuffer(new byte[] { b });
				fed.add(piece);
				v8.writeInbound(piece);
			}
			assertThat(recorder.failure).isNull();
			assertThat(recorder.events).containsExactly("PREFACE " + KVMessage.PROTOCOL_VERSION,
					new KVMessage.Renew(new long[] { 7, -1 }), new KVMessage.Renew(new long[0]));
			assertThat(v8.isOpen()).isTrue();
		}
		finally {
			v8.finishAndReleaseAll();
		}
	}

	@Test
	void aRenewThatMiscountsItsRoomsIsMalformedNamingTheProblem() {
		// A count past the bytes left, a negative count, a room cut short, a byte after the last room, a count over
		// the bound on one message: each closes the connection naming RENEW and what is wrong.
		assertMalformedRenew("00000009" + "0c" + "00000002" + "0000000000000007",
				"malformed RENEW frame: rooms count : 2 (expected: 0..0)");
		assertMalformedRenew("0000000d" + "0c" + "ffffffff" + "0000000000000007",
				"malformed RENEW frame: rooms count : -1 (expected: 0..1)");
		assertMalformedRenew("00000009" + "0c" + "00000001" + "00000000000007",
				"malformed RENEW frame: rooms count : 1 (expected: 0..0)");
		assertMalformedRenew("0000000e" + "0c" + "00000001" + "0000000000000007" + "00",
				"malformed RENEW frame: 1 trailing bytes after the last field");
		int over = KVMessage.Renew.MAX_ROOMS + 1;
		assertMalformedRenew(String.format("%08x", 5 + 8 * over) + "0c" + String.format("%08x", over)
				+ "0000000000000001".repeat(over), "malformed RENEW frame: rooms count : 8193 (expected: at most 8192)",
				1 << 20);
	}

	private void assertMalformedRenew(String frame, String message) {
		assertMalformedRenew(frame, message, MAX);
	}

	private void assertMalformedRenew(String frame, String message, int maxFrameLength) {
		KVFrameDecoderTest.Recorder r = new KVFrameDecoderTest.Recorder();
		EmbeddedChannel v8 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, maxFrameLength, r));
		try {
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump(PREFACE + frame));
			fed.add(in);
			v8.writeInbound(in);
			assertThat(r.failure).as(frame.length() > 80 ? frame.substring(0, 80) : frame).isNotNull();
			assertThat(r.failure.getMessage()).contains(message);
			assertThat(r.events).containsExactly("PREFACE " + KVMessage.PROTOCOL_VERSION);
		}
		finally {
			v8.finishAndReleaseAll();
		}
	}
}
