package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.Random;

import ch.qos.logback.classic.Level;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.test.Samples;
import io.kvferry.transport.netty.LogRecorder;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.Stream;
import io.kvferry.transport.netty.internal.frame.ControlFrames;
import io.kvferry.transport.netty.internal.frame.ScatterCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The frame logger on an {@link EmbeddedChannel}: every frame type is described with its stripe, room and lengths, fed
 * one byte at a time inbound and in one buffer outbound, and no session token is; a stripe named in one direction is
 * named in the other; a stream that stops making sense is said once; and nothing is installed or logged while the
 * category is below DEBUG. Every buffer passes through unchanged (same bytes, same reader index) and is released once.
 */
class FrameLoggerTest {

	private static final String ID = "c0ffee01";
	private static final int MAX = 1 << 20;

	private final List<ByteBuf> fed = new ArrayList<>();

	@AfterEach
	void everyBufferIsReleased() {
		assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).isZero());
	}

	@Test
	void everyFrameTypeIsDescribedWithItsRoomAndLengthsInBothDirections() {
		Stream stream = new Stream();
		List<String> expected = new ArrayList<>();
		everyFrame(stream, expected);
		byte[] bytes = stream.bytes();

		List<String> lines;
		try (LogRecorder log = LogRecorder.at(FrameLogger.CATEGORY, Level.DEBUG)) {
			// One channel per direction: the stripe a direction names is the other's too.
			EmbeddedChannel reading = new EmbeddedChannel();
			FrameLogger.install(reading, ID);
			assertThat(reading.pipeline().get(FrameLogger.class)).isNotNull();
			for (byte b : bytes) {
				reading.writeInbound(feed(new byte[] { b }));
			}
			assertThat(drained(reading.inboundMessages())).isEqualTo(bytes);
			reading.finishAndReleaseAll();
			EmbeddedChannel writing = new EmbeddedChannel();
			FrameLogger.install(writing, ID);
			writing.writeOutbound(feed(bytes));
			assertThat(drained(writing.outboundMessages())).isEqualTo(bytes);
			writing.finishAndReleaseAll();
			lines = log.lines();
		}

		List<String> want = new ArrayList<>();
		expected.forEach(line -> want.add("DEBUG [" + ID + "] IN " + line));
		want.add("DEBUG [" + ID + "] closed");
		expected.forEach(line -> want.add("DEBUG [" + ID + "] OUT " + line));
		want.add("DEBUG [" + ID + "] closed");
		assertThat(lines).containsExactlyElementsOf(want);
		// The session tokens of HELLO, HELLO_ACK and JOIN let whoever holds them join a session: never logged.
		for (long token : new long[] { 0xfedc_ba98_7654_3210L, 0x8000_0000_0000_0001L, 0x0123_4567_89ab_cdefL }) {
			assertThat(lines).noneMatch(line -> line.contains(Long.toString(token))
					|| line.contains(Long.toHexString(token)));
		}
	}

	@Test
	void theStripeAJoinNamesIsNamedByTheFramesOfBothDirections() {
		try (LogRecorder log = LogRecorder.at(FrameLogger.CATEGORY, Level.DEBUG)) {
			EmbeddedChannel channel = new EmbeddedChannel();
			FrameLogger.install(channel, ID);
			Stream in = new Stream();
			in.preface(KVMessage.PROTOCOL_VERSION).message(new KVMessage.AbortAck(7))
					.message(new KVMessage.Join(0x5eC2_e7A1_0B5E_55EDL, 4));
			channel.writeInbound(feed(in.bytes()));
			Stream out = new Stream();
			out.preface(KVMessage.PROTOCOL_VERSION).message(new KVMessage.AbortAck(8));
			channel.writeOutbound(feed(out.bytes()));
			assertThat(passedUnchanged(channel, in.bytes(), out.bytes())).isTrue();
			channel.finishAndReleaseAll();

			String at = "DEBUG [" + ID + "] ";
			assertThat(log.lines()).containsExactly(at + "IN PREFACE version=" + KVMessage.PROTOCOL_VERSION,
					at + "IN ABORT_ACK room=7 length=9", at + "IN JOIN stripe=4 length=13",
					at + "OUT PREFACE version=" + KVMessage.PROTOCOL_VERSION, at + "OUT ABORT_ACK stripe=4 room=8 length=9",
					at + "closed");
		}
	}

	@Test
	void aStreamThatIsNoKvferryStreamIsSaidOnceAndNothingMore() {
		try (LogRecorder log = LogRecorder.at(FrameLogger.CATEGORY, Level.DEBUG)) {
			EmbeddedChannel channel = new EmbeddedChannel();
			FrameLogger.install(channel, ID);
			// A TLS client hello where a preface belongs, then what would be a heartbeat.
			channel.writeInbound(feed(new byte[] { 0x16, 0x03, 0x01, 0x00, (byte) 0xa5, 0x01 }));
			channel.writeInbound(feed(new byte[] { 0, 0, 0, 1, 0x10 }));
			channel.finishAndReleaseAll();

			assertThat(log.lines()).containsExactly("DEBUG [" + ID + "] IN not a kvferry stream: starts with "
					+ "0x16030100 (expected: 0x4b564652 \"KVFR\"); no more frames are described in this direction",
					"DEBUG [" + ID + "] closed");
		}
	}

	@Test
	void belowDebugNothingIsInstalledAndNothingLogged() {
		Stream stream = new Stream();
		everyFrame(stream, new ArrayList<>());
		byte[] bytes = stream.bytes();
		try (LogRecorder log = LogRecorder.at(FrameLogger.CATEGORY, Level.INFO)) {
			EmbeddedChannel channel = new EmbeddedChannel();
			FrameLogger.install(channel, ID);
			assertThat(channel.pipeline().get(FrameLogger.class)).isNull();
			channel.writeInbound(feed(bytes));
			channel.writeOutbound(feed(bytes));
			assertThat(passedUnchanged(channel, bytes, bytes)).isTrue();
			channel.finishAndReleaseAll();

			assertThat(log.lines()).isEmpty();
		}
	}

	/** Writes one frame of every type into {@code stream}, and the line each should get (without the direction). */
	private static void everyFrame(Stream stream, List<String> expected) {
		stream.preface(KVMessage.PROTOCOL_VERSION);
		expected.add("PREFACE version=" + KVMessage.PROTOCOL_VERSION);
		KVFrameCodec.Auth auth = new KVFrameCodec.Auth(true, new byte[SharedSecret.NONCE_LENGTH], MAX,
				new DialledEndpoint("prefill-0:8998", "10.0.0.5:8998"));
		stream.auth(auth);
		expected.add("AUTH length=" + (length(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT, auth))));
		stream.proof(new byte[SharedSecret.PROOF_LENGTH]);
		expected.add("AUTH_PROOF length=" + (1 + SharedSecret.PROOF_LENGTH));
		stream.heartbeat();
		expected.add("HEARTBEAT length=1");
		// A HELLO makes the connection stripe 0, a JOIN or JOINED stripe k; the frames after it name that stripe.
		int stripe = -1;
		for (KVMessage m : Samples.everyMessage()) {
			stream.message(m);
			if (m instanceof KVMessage.Hello) {
				stripe = 0;
			}
			else if (m instanceof KVMessage.Join j) {
				stripe = j.stripe();
			}
			else if (m instanceof KVMessage.Joined j) {
				stripe = j.stripe();
			}
			expected.add(ControlFrames.forMessage(m).name() + (stripe < 0 ? "" : " stripe=" + stripe) + names(m)
					+ " length=" + length(KVFrameCodec.encode(UnpooledByteBufAllocator.DEFAULT, m, MAX)));
		}
		String named = " stripe=" + stripe;

		byte[] payload = new byte[1024];
		new Random(3).nextBytes(payload);
		stream.data(new DataHeader(7, RegionKind.KV, 2, 4096, 256, 512, 4), payload);
		expected.add("DATA" + named + " room=7 kind=KV region=2 offset=4096 chunk=256x4 payload=1024 length="
				+ (1 + 37 + 1024));

		ScatterHeader scatter = new ScatterHeader(9, RegionKind.AUX, 2, new int[] { 0, 1 }, new long[] { 0, 64 },
				new int[] { 10, 20 });
		stream.raw(bytes(ScatterCodec.encode(UnpooledByteBufAllocator.DEFAULT, scatter, 0, 2, 30))).raw(new byte[30]);
		expected.add("DATA_SCATTER" + named + " room=9 kind=AUX pieces=2 payload=30 length=" + (1 + 13 + 2 * 16 + 30));

		ByteBuf slot = KVFrameCodec.writeDataHeader(Unpooled.buffer(), new DataHeader(11, RegionKind.STATE, 0, 0, 64, 64,
				1)).writeInt(3);
		stream.frame(KVFrameCodec.TYPE_DATA_SHM, slot);
		expected.add("DATA_SHM" + named + " room=11 kind=STATE region=0 offset=0 chunk=64x1 payload=64 slot=3 length=42");
		stream.frame(KVFrameCodec.TYPE_SHM_CREDIT, Unpooled.buffer().writeInt(3));
		expected.add("SHM_CREDIT" + named + " length=5");

		// What the decoder would refuse is still described: a body too short for its room, an unknown type.
		stream.frame(KVFrameCodec.TYPE_STATUS, Unpooled.buffer().writeInt(42));
		expected.add("STATUS" + named + " (body of 4 bytes, too short for its header) length=5");
		stream.frame(0x7f, Unpooled.buffer().writeMedium(0));
		expected.add("0x7f" + named + " length=4");
		// A zero length ends the description; the heartbeat after it is not described.
		stream.raw(0, 0, 0, 0, KVFrameCodec.TYPE_HEARTBEAT).heartbeat();
		expected.add("frame of length 0 (expected: >= 1); no more frames are described in this direction");
	}

	/**
	 * @return {@code " room=R"} for a message whose record starts with its room, {@code " rooms=N"} for a renewal,
	 *         else nothing: the frame logger must name the room of every frame that has one
	 */
	private static String names(KVMessage m) {
		if (m instanceof KVMessage.Renew r) {
			return " rooms=" + r.rooms().length;
		}
		RecordComponent[] components = m.getClass().getRecordComponents();
		if (!components[0].getName().equals("room")) {
			return "";
		}
		try {
			return " room=" + components[0].getAccessor().invoke(m);
		}
		catch (ReflectiveOperationException e) {
			throw new AssertionError(e);
		}
	}

	/** @return the frame's length field: its bytes after that field; the buffer is released */
	private static int length(ByteBuf frame) {
		try {
			return frame.readableBytes() - 4;
		}
		finally {
			frame.release();
		}
	}

	private static byte[] bytes(ByteBuf b) {
		try {
			byte[] out = new byte[b.readableBytes()];
			b.readBytes(out);
			return out;
		}
		finally {
			b.release();
		}
	}

	private ByteBuf feed(byte[] bytes) {
		ByteBuf b = Unpooled.directBuffer(bytes.length).writeBytes(bytes);
		fed.add(b);
		return b;
	}

	/** @return whether what came out on each side is the bytes that went in, in order; each buffer is released */
	private static boolean passedUnchanged(EmbeddedChannel channel, byte[] in, byte[] out) {
		return Arrays.equals(drained(channel.inboundMessages()), in)
				&& Arrays.equals(drained(channel.outboundMessages()), out);
	}

	private static byte[] drained(Queue<Object> messages) {
		ByteArrayOutputStream all = new ByteArrayOutputStream();
		for (Object m; (m = messages.poll()) != null;) {
			all.writeBytes(bytes((ByteBuf) m));
		}
		return all.toByteArray();
	}
}
