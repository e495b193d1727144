package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Function;

import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.Samples;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class KVFrameDecoderTest {

	private static final int MAX = 1024;
	private static final String HEARTBEAT = "HEARTBEAT";
	private static final String COMPLETE = "COMPLETE";

	private final Recorder recorder = new Recorder();
	private final EmbeddedChannel channel = new EmbeddedChannel(new KVFrameDecoder(1, MAX, recorder));
	private final List<ByteBuf> fed = new ArrayList<>();

	@AfterEach
	void everyInputBufferIsReleased() {
		channel.finishAndReleaseAll();
		assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).isZero());
	}

	@Test
	void everyMessageTypeAndHeartbeatArriveFedByteByByte() {
		Stream s = new Stream().preface(1);
		for (KVMessage m : Samples.everyMessage()) {
			s.message(m).heartbeat();
		}
		feed(s.bytes(), 1);

		List<Object> expected = new ArrayList<>();
		expected.add("PREFACE 1");
		for (KVMessage m : Samples.everyMessage()) {
			expected.add(m);
			expected.add(HEARTBEAT);
		}
		assertThat(recorder.events).containsExactlyElementsOf(expected);
		assertThat(recorder.failure).isNull();
		assertThat(channel.isOpen()).isTrue();
		assertFalse(channel.finish());
	}

	@Test
	void dataPayloadReachesTheSinkInOrderInOneBytePieces() {
		byte[] payload = random(96);
		DataHeader header = new DataHeader(9, RegionKind.KV, 1, 4096, 32, 128, 3);
		CollectingSink sink = new CollectingSink();
		recorder.sinks = h -> sink;
		feed(new Stream().preface(1).data(header, payload).message(new KVMessage.AbortAck(9)).bytes(), 1);

		assertThat(sink.bytes.toByteArray()).isEqualTo(payload);
		assertThat(sink.segmentSizes).hasSize(96).containsOnly(1);
		assertThat(recorder.events).containsExactly("PREFACE 1", header, COMPLETE, new KVMessage.AbortAck(9));
		assertFalse(channel.finish());
	}

	@Test
	void midPayloadTheDecoderOffersTheSinksLandingZoneAndTakesTheBytesReadIntoIt() {
		byte[] payload = random(300);
		DataHeader header = new DataHeader(4, RegionKind.KV, 0, 0, 300, 300, 1);
		LandingSink sink = new LandingSink(300);
		recorder.sinks = h -> sink;
		KVFrameDecoder decoder = channel.pipeline().get(KVFrameDecoder.class);
		byte[] stream = new Stream().preface(1).data(header, payload).message(new KVMessage.AbortAck(4)).bytes();
		int payloadStart = new Stream().preface(1).data(header, payload).bytes().length - 300;

		assertThat(decoder.landingZone(1, 1000)).as("before any frame").isNull();
		feed(Arrays.copyOfRange(stream, 0, payloadStart + 20), 7);
		assertThat(decoder.landingZone(281, 1000)).as("fewer bytes left than asked for").isNull();
		ByteBuf zone = decoder.landingZone(100, 1000);
		assertThat(sink.asked).containsExactly(100, 280);
		// The socket reads 200 bytes into the zone; the read reaches the decoder like any other.
		zone.writeBytes(payload, 20, 200);
		channel.writeInbound(zone);
		assertThat(sink.memory.refCnt()).as("the decoder released the read (its zone)").isEqualTo(1);
		feed(Arrays.copyOfRange(stream, payloadStart + 220, stream.length), 13);

		assertThat(recorder.failure).isNull();
		assertThat(sink.inPlace).as("bytes that landed were not copied again").isEqualTo(200);
		assertThat(sink.bytes()).isEqualTo(payload);
		assertThat(recorder.events).containsExactly("PREFACE 1", header, COMPLETE, new KVMessage.AbortAck(4));
		assertThat(decoder.landingZone(1, 1000)).as("between frames").isNull();
	}

	@Test
	void noLandingZoneForASkippedPayload() {
		DataHeader header = new DataHeader(1, RegionKind.AUX, 0, 0, 500, 500, 1);
		KVFrameDecoder decoder = channel.pipeline().get(KVFrameDecoder.class);
		byte[] stream = new Stream().preface(1).data(header, random(500)).bytes();
		feed(Arrays.copyOfRange(stream, 0, stream.length - 400), 50);
		assertThat(decoder.landingZone(1, 1000)).isNull();
	}

	@Test
	void payloadIsSkippedWhenThereIsNoSink() {
		DataHeader header = new DataHeader(1, RegionKind.AUX, 0, 0, 50, 50, 1);
		feed(new Stream().preface(1).data(header, random(50)).message(new KVMessage.AbortAck(1)).bytes(), 7);

		assertThat(recorder.events).containsExactly("PREFACE 1", header, new KVMessage.AbortAck(1));
		assertFalse(channel.finish());
	}

	@Test
	void severalFramesInOneReadAndFramesSplitAcrossReads() {
		byte[] payload = random(300);
		DataHeader header = new DataHeader(2, RegionKind.STATE, 0, 0, 300, 300, 1);
		CollectingSink sink = new CollectingSink();
		recorder.sinks = h -> sink;
		byte[] stream = new Stream().preface(1).message(new KVMessage.Abort(2, "x")).data(header, payload).heartbeat()
				.data(new DataHeader(3, RegionKind.KV, 0, 0, 0, 0, 0), new byte[0]).message(new KVMessage.AbortAck(2))
				.bytes();
		// One read with everything, then the same stream again cut at awkward places.
		feed(stream, stream.length);
		assertThat(recorder.events).containsExactly("PREFACE 1", new KVMessage.Abort(2, "x"), header, COMPLETE,
				HEARTBEAT, new DataHeader(3, RegionKind.KV, 0, 0, 0, 0, 0), COMPLETE, new KVMessage.AbortAck(2));
		assertThat(sink.bytes.toByteArray()).isEqualTo(payload);
		assertThat(sink.segmentSizes).containsExactly(300);
		assertFalse(channel.finish());
	}

	@Test
	void payloadSegmentsHoldOnlyTheFramesBytes() {
		byte[] payload = random(40);
		CollectingSink sink = new CollectingSink();
		recorder.sinks = h -> sink;
		byte[] stream = new Stream().preface(1).data(new DataHeader(1, RegionKind.KV, 0, 0, 40, 40, 1), payload)
				.message(new KVMessage.AbortAck(1)).bytes();
		feed(stream, 23);
		assertThat(sink.bytes.toByteArray()).isEqualTo(payload);
		assertThat(recorder.events).endsWith(new KVMessage.AbortAck(1));
	}

	@Test
	void authAndProofFramesArriveFedByteByByte() {
		byte[] nonce = random(SharedSecret.NONCE_LENGTH, 1);
		byte[] proof = random(SharedSecret.PROOF_LENGTH, 2);
		DialledEndpoint dialled = new DialledEndpoint("prefill-0.example:5000", "[fe80::1]:5000");
		feed(new Stream().preface(1).auth(new KVFrameCodec.Auth(true, nonce, 16 << 20, dialled)).heartbeat()
				.proof(proof).auth(new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 16 << 20))
				.bytes(), 1);
		assertThat(recorder.events).containsExactly("PREFACE 1", new KVFrameCodec.Auth(true, nonce, 16 << 20, dialled),
				HEARTBEAT,
				"PROOF " + ByteBufUtil.hexDump(proof),
				new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 16 << 20));
		assertFalse(channel.finish());
	}

	@Test
	void authFrameOfAnotherLengthIsRejectedFromItsPrefix() {
		feed(new Stream().preface(1).raw(0, 0, 0x10, 0, KVFrameCodec.TYPE_AUTH).bytes(), 1);
		assertClosedWith("malformed AUTH frame: body of 4095 bytes (expected: 49..649)");
	}

	@Test
	void authFrameTooShortForItsEndpointFieldsIsRejectedFromItsPrefix() {
		// A version-5 AUTH body (37 bytes: no endpoint fields, no heartbeat interval) under this version's preface.
		feed(new Stream().preface(1).raw(0, 0, 0, 38, KVFrameCodec.TYPE_AUTH).bytes(), 1);
		assertClosedWith("malformed AUTH frame: body of 37 bytes (expected: 49..649)");
	}

	@Test
	void proofFrameOfAnotherLengthIsRejectedFromItsPrefix() {
		feed(new Stream().preface(1).raw(0, 0, 0, 32, KVFrameCodec.TYPE_AUTH_PROOF).bytes(), 1);
		assertClosedWith("malformed AUTH_PROOF frame: body of 31 bytes (expected: 32)");
	}

	@Test
	void authFrameWithAnUnknownFlagIsRejected() {
		ByteBuf body = Unpooled.buffer().writeByte(0x03).writeZero(SharedSecret.NONCE_LENGTH).writeInt(1 << 20)
				.writeInt(5000).writeLong(0);
		feed(new Stream().preface(1).frame(KVFrameCodec.TYPE_AUTH, body).bytes(), 1);
		assertClosedWith("malformed AUTH frame: flags : 0x03 (expected: 0x00 or 0x01)");
	}

	@Test
	void authFrameWithAFrameLimitOutOfRangeIsRejected() {
		ByteBuf body = Unpooled.buffer().writeByte(0).writeZero(SharedSecret.NONCE_LENGTH).writeInt(1023).writeInt(5000)
				.writeLong(0);
		feed(new Stream().preface(1).frame(KVFrameCodec.TYPE_AUTH, body).bytes(), 1);
		assertClosedWith("malformed AUTH frame: maxFrameLength : 1023 (expected: 1024..1073741824)");
	}

	@Test
	void tlsClientHelloIsNamedAsSuch() {
		feed(new byte[] { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00 }, 1);
		assertClosedWith("not a kvferry peer: stream starts with 0x16030102");
		assertThat(recorder.failure.getMessage()).endsWith("(a TLS handshake: the peer uses TLS, this side does not)");
	}

	@Test
	void wrongMagicIsNotAKvferryPeer() {
		feed("GET / HTTP/1.1\r\n\r\n".getBytes(), 1);
		assertClosedWith("not a kvferry peer");
	}

	@Test
	void anotherProtocolVersionIsRejectedNamingBoth() {
		feed(new Stream().preface(2).message(new KVMessage.AbortAck(1)).bytes(), 1);
		assertClosedWith("incompatible kvferry protocol version : 2 (expected: 1)");
		assertThat(recorder.events).isEmpty();
	}

	@Test
	void version4TransferRequestAndDrainingArriveFedByteByByte() {
		EmbeddedChannel v3 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			byte[] bytes = ByteBufUtil.decodeHexDump("4b564652" + "000b"
					+ "00000031" + "04" + "0000000000000001" + "00000001" + "00000002" + "ffffffff" + "00000000"
					+ "00000001" + "00" + "00000005" + "30302d6162" + "00000010" + "00000000" + "00" + "00"
					+ "00000006" + "08" + "00000001" + "78");
			for (byte b : bytes) {
				ByteBuf piece = Unpooled.wrappedBuffer(new byte[] { b });
				fed.add(piece);
				v3.writeInbound(piece);
			}
			assertThat(recorder.events).containsExactly("PREFACE " + KVMessage.PROTOCOL_VERSION,
					new KVMessage.TransferRequest(1, new int[] { 2 }, -1, new int[0], 1, false, "00-ab", 16,
							new int[0]),
					new KVMessage.Draining("x"));
			assertThat(v3.isOpen()).isTrue();
		}
		finally {
			v3.finishAndReleaseAll();
		}
	}

	@Test
	void version5StripeMessagesArriveFedByteByByte() {
		EmbeddedChannel v5 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			byte[] bytes = ByteBufUtil.decodeHexDump("4b564652" + "000b"
					+ "0000000d" + "09" + "8000000000000001" + "00000002"
					+ "00000005" + "0a" + "00000002"
					+ "00000019" + "0b" + "0000000000000007" + "0000000000400000" + "00000000deadbeef"
					+ "00000019" + "0b" + "0000000000000008" + "0000000000000000" + "ffffffffffffffff");
			for (byte b : bytes) {
				ByteBuf piece = Unpooled.wrappedBuffer(new byte[] { b });
				fed.add(piece);
				v5.writeInbound(piece);
			}
			assertThat(KVMessage.PROTOCOL_VERSION).isEqualTo(11);
			assertThat(recorder.events).containsExactly("PREFACE " + KVMessage.PROTOCOL_VERSION, new KVMessage.Join(0x8000_0000_0000_0001L, 2),
					new KVMessage.Joined(2), new KVMessage.Fence(7, 4 << 20, 0xdeadbeefL),
					new KVMessage.Fence(8, 0, KVMessage.NO_CHECKSUM));
			assertThat(v5.isOpen()).isTrue();
		}
		finally {
			v5.finishAndReleaseAll();
		}
	}

	@Test
	void aFenceWithANegativeByteCountIsMalformedNamingTheField() {
		EmbeddedChannel v5 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump("4b564652" + "000b"
					+ "00000019" + "0b" + "0000000000000007" + "ffffffffffffffff" + "0000000000000000"));
			fed.add(in);
			v5.writeInbound(in);
			assertThat(recorder.failure).isNotNull();
			assertThat(recorder.failure.getMessage()).contains("FENCE").contains("bytes=-1");
		}
		finally {
			v5.finishAndReleaseAll();
		}
	}

	@Test
	void aVersion5PeerWhoseAuthHasNoEndpointIsRefusedAtItsPreface() {
		EmbeddedChannel v6 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			// A version-5 peer's preface and AUTH (37-byte body): refused before its AUTH is read.
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump("4b5646520005" + "00000026" + "11" + "01"
					+ "00".repeat(32) + "01000000"));
			fed.add(in);
			v6.writeInbound(in);
			assertThat(recorder.failure).isNotNull();
			assertThat(recorder.failure.getMessage()).isEqualTo("incompatible kvferry protocol version : 5 (expected: "
					+ "11): the peer runs an older kvferry release; run the same release on both sides");
			assertThat(recorder.events).isEmpty();
		}
		finally {
			v6.finishAndReleaseAll();
		}
	}

	@Test
	void aVersion6PeerWhoseHelloHasNoIncarnationIsRefusedAtItsPreface() {
		EmbeddedChannel v7 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			// A version-6 peer writes HELLO and HELLO_ACK without an incarnation: it is told to upgrade before any
			// frame is read, rather than failing on a body one field short.
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump("4b5646520006" + "00000001" + "10"));
			fed.add(in);
			v7.writeInbound(in);
			assertThat(recorder.failure).isNotNull();
			assertThat(recorder.failure.getMessage()).isEqualTo("incompatible kvferry protocol version : 6 (expected: "
					+ "11): the peer runs an older kvferry release; run the same release on both sides");
			assertThat(recorder.events).isEmpty();
		}
		finally {
			v7.finishAndReleaseAll();
		}
	}

	@Test
	void aVersion7PeerIsRefusedAtItsPreface() {
		EmbeddedChannel v8 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			// A version-7 prefill's HELLO_ACK ends at its incarnation and it never reads a RENEW; a version-7 peer
			// would take a DATA_SCATTER frame for an unknown type: refused before any frame is read, and told to
			// upgrade, rather than failing on a body one field short or on an unknown frame type.
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump("4b5646520007" + "00000001" + "10"));
			fed.add(in);
			v8.writeInbound(in);
			assertThat(recorder.failure).isNotNull();
			assertThat(recorder.failure.getMessage()).isEqualTo("incompatible kvferry protocol version : 7 (expected: "
					+ "11): the peer runs an older kvferry release; run the same release on both sides");
			assertThat(recorder.events).isEmpty();
		}
		finally {
			v8.finishAndReleaseAll();
		}
	}

	@Test
	void aVersion8PeerIsRefusedAtItsPreface() {
		EmbeddedChannel v9 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			// A version-8 prefill's STATUS ends at its checksum and fences every further stripe, whatever it carried:
			// refused before any frame is read, rather than failing on a Success one field short.
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump("4b5646520008" + "00000001" + "10"));
			fed.add(in);
			v9.writeInbound(in);
			assertThat(recorder.failure).isNotNull();
			assertThat(recorder.failure.getMessage()).isEqualTo("incompatible kvferry protocol version : 8 (expected: "
					+ "11): the peer runs an older kvferry release; run the same release on both sides");
			assertThat(recorder.events).isEmpty();
		}
		finally {
			v9.finishAndReleaseAll();
		}
	}

	@Test
	void aVersion10PeerIsRefusedAtItsPreface() {
		EmbeddedChannel v11 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			// A version-10 peer's TRANSFER_REQUEST carries no claim: refused before any frame is read, rather than
			// failing on a body two bytes short.
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump("4b564652000a" + "00000001" + "10"));
			fed.add(in);
			v11.writeInbound(in);
			assertThat(recorder.failure).isNotNull();
			assertThat(recorder.failure.getMessage()).isEqualTo("incompatible kvferry protocol version : 10 (expected: "
					+ "11): the peer runs an older kvferry release; run the same release on both sides");
			assertThat(recorder.events).isEmpty();
		}
		finally {
			v11.finishAndReleaseAll();
		}
	}

	@Test
	void aVersion3PeerIsRejectedNamingBothVersions() {
		EmbeddedChannel v3 = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			ByteBuf preface = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump("4b5646520003"));
			fed.add(preface);
			v3.writeInbound(preface);
			assertThat(recorder.failure).isNotNull();
			assertThat(recorder.failure.getMessage())
					.contains("incompatible kvferry protocol version : 3 (expected: 11): the peer runs an older "
							+ "kvferry release");
		}
		finally {
			v3.finishAndReleaseAll();
		}
	}

	@Test
	void unknownFrameTypeIsRejected() {
		feed(new Stream().preface(1).raw(0, 0, 0, 1, 0x7f).bytes(), 1);
		assertClosedWith("unknown frame type 0x7f");
	}

	@Test
	void controlFrameLongerThanTheMaximumIsRejectedBeforeBuffering() {
		feed(new Stream().preface(1).raw(0x7f, 0xff, 0xff, 0xff, KVFrameCodec.TYPE_REJECT).bytes(), 1);
		assertClosedWith("exceeds maxFrameLength 1024");
	}

	@Test
	void zeroLengthFrameIsRejected() {
		feed(new Stream().preface(1).raw(0, 0, 0, 0, 1).bytes(), 1);
		assertClosedWith("length 0");
	}

	@Test
	void heartbeatWithABodyIsRejected() {
		feed(new Stream().preface(1).raw(0, 0, 0, 2, KVFrameCodec.TYPE_HEARTBEAT, 0).bytes(), 1);
		assertClosedWith("malformed HEARTBEAT frame");
	}

	@Test
	void negativeCountInsideAMessageIsRejected() {
		ByteBuf body = Unpooled.buffer().writeLong(1).writeInt(-1);
		feed(new Stream().preface(1).frame(KVFrameCodec.TYPE_TRANSFER_REQUEST, body).bytes(), 1);
		assertClosedWith("malformed TRANSFER_REQUEST frame: dstPages count : -1");
	}

	@Test
	void hugeCountInsideAMessageIsRejectedWithoutAllocating() {
		ByteBuf body = Unpooled.buffer().writeLong(1).writeInt(Integer.MAX_VALUE).writeInt(5);
		feed(new Stream().preface(1).frame(KVFrameCodec.TYPE_TRANSFER_REQUEST, body).bytes(), 1);
		assertClosedWith("dstPages count : 2147483647 (expected: 0..1)");
	}

	@Test
	void hugeStringLengthIsRejected() {
		ByteBuf body = Unpooled.buffer().writeInt(Integer.MAX_VALUE).writeByte('x');
		feed(new Stream().preface(1).frame(KVFrameCodec.TYPE_REJECT, body).bytes(), 1);
		assertClosedWith("malformed REJECT frame: reason length : 2147483647 (expected: 0..1)");
	}

	@Test
	void truncatedBodyIsRejected() {
		ByteBuf body = Unpooled.buffer().writeLong(1).writeByte(4).writeInt(0);
		feed(new Stream().preface(1).frame(KVFrameCodec.TYPE_STATUS, body).bytes(), 1);
		assertClosedWith("malformed STATUS frame: reason length count needs 4 bytes but 0 remain (truncated body)"
				.replace(" count", ""));
	}

	@Test
	void invalidLayoutValuesAreRejected() {
		ByteBuf body = Unpooled.buffer().writeInt(0).writeInt(2).writeInt(5);
		feed(new Stream().preface(1).frame(KVFrameCodec.TYPE_HELLO_ACK, body.writeZero(200)).bytes(), 1);
		assertClosedWith("malformed HELLO_ACK frame: attnTpRank : 5 (expected: 0..1)");
	}

	@Test
	void booleanOtherThanZeroOrOneIsRejected() {
		ByteBuf body = Unpooled.buffer().writeLong(1).writeInt(0).writeInt(0).writeInt(0).writeInt(1).writeByte(2);
		feed(new Stream().preface(1).frame(KVFrameCodec.TYPE_TRANSFER_REQUEST, body).bytes(), 1);
		assertClosedWith("dummy : 2 (expected: 0 or 1)");
	}

	@Test
	void dataFrameAnnouncingMoreThanTheMaximumIsRejected() {
		long length = 1 + KVFrameCodec.DATA_HEADER_LENGTH + MAX + 1;
		feed(new Stream().preface(1).raw(0, 0, (int) (length >> 8), (int) (length & 0xff), KVFrameCodec.TYPE_DATA)
				.bytes(), 1);
		assertClosedWith("malformed DATA frame: length " + length);
	}

	@Test
	void dataHeaderDisagreeingWithTheFrameLengthIsRejected() {
		Stream s = new Stream().preface(1);
		ByteBuf header = KVFrameCodec.encodeDataHeader(UnpooledByteBufAllocator.DEFAULT,
				new DataHeader(1, RegionKind.KV, 0, 0, 1 << 20, 0, 1 << 10));
		header.setInt(0, 1 + KVFrameCodec.DATA_HEADER_LENGTH + 16);
		feed(s.raw(ByteBufUtil.getBytes(header)).bytes(), 1);
		header.release();
		assertClosedWith("announces chunkLen 1048576 x count 1024 = 1073741824 payload bytes but the frame has 16");
		assertThat(recorder.events).containsExactly("PREFACE 1");
	}

	@Test
	void negativeDataHeaderFieldIsRejected() {
		ByteBuf header = KVFrameCodec.encodeDataHeader(UnpooledByteBufAllocator.DEFAULT,
				new DataHeader(1, RegionKind.KV, 0, 0, 0, 0, 0));
		header.setInt(KVFrameCodec.FRAME_PREFIX_LENGTH + 9, -3);
		feed(new Stream().preface(1).raw(ByteBufUtil.getBytes(header)).bytes(), 1);
		header.release();
		assertClosedWith("region=-3");
	}

	@Test
	void sinkFailureClosesTheChannelWithoutEscaping() {
		recorder.sinks = h -> new PayloadSink() {
			@Override
			public void write(ByteBuf segment) {
				throw new IllegalStateException("disk on fire");
			}

			@Override
			public void complete() {
			}
		};
		feed(new Stream().preface(1).data(new DataHeader(1, RegionKind.KV, 0, 0, 8, 8, 1), random(8)).bytes(), 1);
		assertThat(channel.isOpen()).isFalse();
		assertThat(recorder.failure).isInstanceOf(IllegalStateException.class).hasMessage("disk on fire");
		channel.checkException();
	}

	@Test
	void forbiddenWriteFromOnDataClosesWithItsReason() {
		recorder.sinks = h -> {
			throw new ProtocolException("room 1 did not ask for page 0");
		};
		feed(new Stream().preface(1).data(new DataHeader(1, RegionKind.KV, 0, 0, 8, 8, 1), random(8))
				.message(new KVMessage.AbortAck(1)).bytes(), 3);
		assertClosedWith("room 1 did not ask for page 0");
		assertThat(recorder.events).doesNotContain(new KVMessage.AbortAck(1));
	}

	@Test
	void inputEndingInsideAFrameIsReported() {
		feed(Arrays.copyOf(new Stream().preface(1).message(new KVMessage.Abort(1, "abc")).bytes(), 12), 1);
		assertThat(channel.isOpen()).isTrue();
		channel.close();
		assertThat(recorder.failure).isInstanceOf(ProtocolException.class)
				.hasMessage("connection closed in the middle of a ABORT frame");
	}

	private void assertClosedWith(String reason) {
		assertThat(recorder.failure).isInstanceOf(ProtocolException.class);
		assertThat(recorder.failure.getMessage()).contains(reason);
		assertThat(recorder.failures).isEqualTo(1);
		assertThat(channel.isOpen()).isFalse();
		channel.checkException();
		assertFalse(channel.finish());
	}

	private void feed(byte[] bytes, int size) {
		feed(channel, fed, bytes, size);
	}

	/**
	 * Feeds {@code bytes} to {@code channel} in pieces of {@code size} until it closes, each piece kept in {@code fed}
	 * so that a test can check they were all released.
	 */
	static void feed(EmbeddedChannel channel, List<ByteBuf> fed, byte[] bytes, int size) {
		for (int i = 0; i < bytes.length && channel.isOpen(); i += size) {
			ByteBuf piece = Unpooled.copiedBuffer(bytes, i, Math.min(size, bytes.length - i));
			fed.add(piece);
			channel.writeInbound(piece);
		}
		channel.runPendingTasks();
	}

	private static byte[] random(int n) {
		return random(n, n);
	}

	private static byte[] random(int n, long seed) {
		byte[] b = new byte[n];
		new Random(seed).nextBytes(b);
		return b;
	}

	/** Builds a byte stream of prefaces and frames. */
	static final class Stream {

		private final ByteArrayOutputStream out = new ByteArrayOutputStream();

		Stream preface(int version) {
			return buf(KVFrameCodec.encodePreface(UnpooledByteBufAllocator.DEFAULT, version));
		}

		Stream message(KVMessage m) {
			return buf(KVFrameCodec.encode(UnpooledByteBufAllocator.DEFAULT, m, MAX));
		}

		Stream auth(KVFrameCodec.Auth auth) {
			return buf(KVFrameCodec.encodeAuth(UnpooledByteBufAllocator.DEFAULT, auth));
		}

		Stream proof(byte[] proof) {
			return buf(KVFrameCodec.encodeAuthProof(UnpooledByteBufAllocator.DEFAULT, proof));
		}

		Stream heartbeat() {
			return buf(KVFrameCodec.encodeHeartbeat(UnpooledByteBufAllocator.DEFAULT));
		}

		Stream data(DataHeader header, byte[] payload) {
			buf(KVFrameCodec.encodeDataHeader(UnpooledByteBufAllocator.DEFAULT, header));
			out.writeBytes(payload);
			return this;
		}

		/** A frame with a hand-made body (released here). */
		Stream frame(int type, ByteBuf body) {
			int n = body.readableBytes();
			raw(n + 1 >>> 24, n + 1 >>> 16 & 0xff, n + 1 >>> 8 & 0xff, n + 1 & 0xff, type);
			return buf(body);
		}

		Stream raw(int... bytes) {
			for (int b : bytes) {
				out.write(b);
			}
			return this;
		}

		Stream raw(byte[] bytes) {
			out.writeBytes(bytes);
			return this;
		}

		private Stream buf(ByteBuf b) {
			out.writeBytes(ByteBufUtil.getBytes(b));
			b.release();
			return this;
		}

		byte[] bytes() {
			return out.toByteArray();
		}
	}

	/** Records decoder events; a sink it hands out records COMPLETE. */
	static final class Recorder implements KVFrameDecoder.Listener {

		final List<Object> events = new ArrayList<>();
		Function<DataHeader, PayloadSink> sinks = h -> null;
		Throwable failure;
		int failures;

		@Override
		public void onPreface(int version) {
			events.add("PREFACE " + version);
		}

		@Override
		public void onMessage(KVMessage message) {
			events.add(message);
		}

		@Override
		public void onHeartbeat() {
			events.add(HEARTBEAT);
		}

		@Override
		public void onAuth(KVFrameCodec.Auth auth) {
			events.add(auth);
		}

		@Override
		public void onAuthProof(byte[] proof) {
			events.add("PROOF " + ByteBufUtil.hexDump(proof));
		}

		@Override
		public PayloadSink onData(DataHeader header) {
			events.add(header);
			PayloadSink sink = sinks.apply(header);
			if (sink == null) {
				return null;
			}
			return new PayloadSink() {
				@Override
				public void write(ByteBuf segment) {
					sink.write(segment);
				}

				@Override
				public void complete() {
					events.add(COMPLETE);
					sink.complete();
				}

				@Override
				public ByteBuf landingZone(int minBytes, int maxBytes) {
					return sink.landingZone(minBytes, maxBytes);
				}

				@Override
				public void landed(int n) {
					sink.landed(n);
				}
			};
		}

		@Override
		public void onFailure(Throwable cause) {
			failure = cause;
			failures++;
		}
	}

	/** A sink over its own direct memory that offers landing zones, as registered memory does. */
	static final class LandingSink implements PayloadSink {

		final ByteBuf memory;
		final List<Integer> asked = new ArrayList<>();
		int position;
		int inPlace;

		LandingSink(int length) {
			memory = Unpooled.directBuffer(length, length);
		}

		@Override
		public ByteBuf landingZone(int minBytes, int maxBytes) {
			asked.add(minBytes);
			asked.add(maxBytes);
			return memory.retainedSlice(position, Math.min(maxBytes, memory.capacity() - position)).clear();
		}

		@Override
		public void write(ByteBuf segment) {
			int n = segment.readableBytes();
			memory.setBytes(position, segment, segment.readerIndex(), n);
			position += n;
		}

		@Override
		public void landed(int n) {
			inPlace += n;
			position += n;
		}

		@Override
		public void complete() {
		}

		byte[] bytes() {
			byte[] b = new byte[position];
			memory.getBytes(0, b);
			memory.release();
			return b;
		}
	}

	/** Copies every segment, checking it is not consumed or released by the sink's caller too early. */
	static final class CollectingSink implements PayloadSink {

		final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
		final List<Integer> segmentSizes = new ArrayList<>();

		@Override
		public void write(ByteBuf segment) {
			assertThat(segment.refCnt()).isPositive();
			segmentSizes.add(segment.readableBytes());
			bytes.writeBytes(ByteBufUtil.getBytes(segment));
		}

		@Override
		public void complete() {
		}
	}
}
