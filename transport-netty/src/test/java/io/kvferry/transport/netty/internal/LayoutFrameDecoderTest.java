package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.test.Samples;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code LAYOUT} frames (decode's layout after a re-registration) through the codec and the decoder on an
 * {@link EmbeddedChannel}: the documented bytes, fed byte by byte, and malformed bodies.
 */
class LayoutFrameDecoderTest {

	private static final String PREFACE = "4b564652" + String.format("%04x", KVMessage.PROTOCOL_VERSION);
	private static final int MAX = 1 << 16;
	private static final PeerLayout LAYOUT = Samples.layout(0);

	private final List<ByteBuf> fed = new ArrayList<>();

	@AfterEach
	void everyInputBufferIsReleased() {
		assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).isZero());
	}

	/** @return the frame of {@code layout} as hex: length, type 0x0d, generation, then the layout as HELLO has it */
	private static String frame(KVMessage layout) {
		ByteBuf frame = KVFrameCodec.encode(PooledByteBufAllocator.DEFAULT, layout, MAX);
		try {
			return ByteBufUtil.hexDump(frame);
		}
		finally {
			frame.release();
		}
	}

	/** @return the layout's bytes as a HELLO carries them, after its protocol version */
	private static String layoutBytes() {
		String hello = frame(new KVMessage.Hello(KVMessage.PROTOCOL_VERSION, LAYOUT, false, 1, 0));
		// length (8 hex) + type (2) + protocol version (8), and after the layout: checksums, stripes, incarnation.
		return hello.substring(18, hello.length() - 2 * (1 + 4 + 8));
	}

	@Test
	void aLayoutHasTheDocumentedBytesAndArrivesFedByteByByte() {
		String layout = layoutBytes();
		String expected = String.format("%08x", 1 + 4 + layout.length() / 2) + "0d" + "7fffffff" + layout;
		assertThat(frame(new KVMessage.Layout(KVMessage.Layout.MAX_GENERATION, LAYOUT))).isEqualTo(expected);

		KVFrameDecoderTest.Recorder recorder = new KVFrameDecoderTest.Recorder();
		EmbeddedChannel channel = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			byte[] bytes = ByteBufUtil.decodeHexDump(PREFACE + expected + frame(new KVMessage.Layout(1, LAYOUT)));
			for (byte b : bytes) {
				ByteBuf piece = Unpooled.wrappedBuffer(new byte[] { b });
				fed.add(piece);
				channel.writeInbound(piece);
			}
			assertThat(recorder.failure).isNull();
			assertThat(recorder.events).containsExactly("PREFACE " + KVMessage.PROTOCOL_VERSION,
					new KVMessage.Layout(KVMessage.Layout.MAX_GENERATION, LAYOUT), new KVMessage.Layout(1, LAYOUT));
			assertThat(channel.isOpen()).isTrue();
		}
		finally {
			channel.finishAndReleaseAll();
		}
	}

	@Test
	void aLayoutWithAGenerationOutOfRangeOrTheWrongLengthIsMalformedNamingTheProblem() {
		String layout = layoutBytes();
		String length = String.format("%08x", 1 + 4 + layout.length() / 2);
		assertMalformed(length + "0d" + "00000000" + layout, "malformed LAYOUT frame: generation : 0 (expected: 1..");
		assertMalformed(length + "0d" + "ffffffff" + layout, "malformed LAYOUT frame: generation : -1 (expected: 1..");
		assertMalformed(String.format("%08x", 1 + 4 + layout.length() / 2 + 1) + "0d" + "00000001" + layout + "00",
				"malformed LAYOUT frame: 1 trailing bytes after the last field");
		assertMalformed(String.format("%08x", 1 + 4 + 2) + "0d" + "00000001" + layout.substring(0, 4),
				"malformed LAYOUT frame");
	}

	private void assertMalformed(String frame, String message) {
		KVFrameDecoderTest.Recorder r = new KVFrameDecoderTest.Recorder();
		EmbeddedChannel channel = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, r));
		try {
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump(PREFACE + frame));
			fed.add(in);
			channel.writeInbound(in);
			assertThat(r.failure).as(frame.substring(0, 20)).isNotNull();
			assertThat(r.failure.getMessage()).contains(message);
			assertThat(r.events).containsExactly("PREFACE " + KVMessage.PROTOCOL_VERSION);
		}
		finally {
			channel.finishAndReleaseAll();
		}
	}
}
