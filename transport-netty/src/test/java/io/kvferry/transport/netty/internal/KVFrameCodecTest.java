package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;

import io.kvferry.FailureCause;
import io.kvferry.KVFerryException;
import io.kvferry.KVPoll;
import io.kvferry.ProtocolException;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.FailureCodes;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.Samples;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

class KVFrameCodecTest {

	private static final PooledByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;

	@Test
	void everyMessageTypeRoundTrips() {
		for (KVMessage message : Samples.everyMessage()) {
			ByteBuf frame = KVFrameCodec.encode(ALLOC, message, 1 << 20);
			try {
				assertThat(frame.readUnsignedInt()).isEqualTo(frame.readableBytes());
				int type = frame.readUnsignedByte();
				assertThat(KVFrameCodec.isControlType(type)).isTrue();
				assertThat(KVFrameCodec.decode(type, frame)).isEqualTo(message);
				assertThat(frame.isReadable()).isFalse();
			}
			finally {
				assertThat(frame.release()).isTrue();
			}
		}
	}

	@Test
	void prefaceAndHeartbeatHaveTheDocumentedBytes() {
		ByteBuf preface = KVFrameCodec.encodePreface(ALLOC, 1);
		ByteBuf heartbeat = KVFrameCodec.encodeHeartbeat(ALLOC);
		try {
			assertThat(ByteBufUtil.hexDump(preface)).isEqualTo("4b5646520001");
			assertThat(ByteBufUtil.hexDump(heartbeat)).isEqualTo("0000000110");
		}
		finally {
			preface.release();
			heartbeat.release();
		}
	}

	@Test
	void authAndProofHaveTheDocumentedBytesAndRoundTrip() {
		byte[] nonce = new byte[SharedSecret.NONCE_LENGTH];
		nonce[0] = 0x11;
		nonce[31] = 0x22;
		byte[] proof = new byte[SharedSecret.PROOF_LENGTH];
		proof[5] = 0x33;
		DialledEndpoint dialled = new DialledEndpoint("p.x:80", "[::1]:80");
		ByteBuf auth = KVFrameCodec.encodeAuth(ALLOC, new KVFrameCodec.Auth(true, nonce, 16 << 20, dialled));
		ByteBuf none = KVFrameCodec.encodeAuth(ALLOC,
				new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 16 << 20));
		ByteBuf proofFrame = KVFrameCodec.encodeAuthProof(ALLOC, proof);
		try {
			// Body: flags, nonce, maxFrameLength, the heartbeat interval (ms), then the endpoint "p.x:80" and the
			// address "[::1]:80" as strings.
			assertThat(ByteBufUtil.hexDump(auth)).isEqualTo("00000040" + "11" + "01" + "11" + "00".repeat(30) + "22"
					+ "01000000" + "00001388" + "00000006" + "702e783a3830" + "00000008" + "5b3a3a315d3a3830");
			assertThat(ByteBufUtil.hexDump(none)).isEqualTo("00000032" + "11" + "00" + "00".repeat(32) + "01000000"
					+ "00001388" + "00000000" + "00000000");
			assertThat(ByteBufUtil.hexDump(proofFrame)).isEqualTo("00000021" + "12" + "0000000000" + "33"
					+ "00".repeat(26));
			assertThat(KVFrameCodec.decodeAuth(auth.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH)))
					.isEqualTo(new KVFrameCodec.Auth(true, nonce, 16 << 20, dialled));
			assertThat(KVFrameCodec.decodeAuth(none.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH)).dialled())
					.isEqualTo(DialledEndpoint.NONE);
			assertThat(KVFrameCodec.decodeAuthProof(proofFrame.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH)))
					.isEqualTo(proof);
			assertThat(KVFrameCodec.typeName(KVFrameCodec.TYPE_AUTH)).isEqualTo("AUTH");
			assertThat(KVFrameCodec.typeName(KVFrameCodec.TYPE_AUTH_PROOF)).isEqualTo("AUTH_PROOF");
			assertThat(KVFrameCodec.isControlType(KVFrameCodec.TYPE_AUTH)).isFalse();
			assertThat(new KVFrameCodec.Auth(true, nonce, 16 << 20).toString()).doesNotContain("nonce");
		}
		finally {
			auth.release();
			none.release();
			proofFrame.release();
		}
		assertThatThrownBy(() -> KVFrameCodec.encodeAuthProof(ALLOC, new byte[3]))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("proof : 3 bytes (expected: 32)");
		assertThatThrownBy(() -> new KVFrameCodec.Auth(false, new byte[31], 16 << 20))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("nonce : 31 bytes (expected: 32)");
	}

	@Test
	void anAuthEndpointThatIsTooLongOrNotHostAndPortIsMalformedNamingTheField() {
		assertMalformedAuth(authBody("x".repeat(DialledEndpoint.MAX_LENGTH - 1) + ":1", ""),
				"malformed AUTH frame: endpoint length : 301 (expected: 0..300)");
		assertMalformedAuth(authBody("p.x:80\n", ""),
				"malformed AUTH frame: endpoint : a control character or space at index 6 (expected: host:port)");
		assertMalformedAuth(authBody("p.x", ""), "malformed AUTH frame: endpoint : address 'p.x': missing ':port'");
		assertMalformedAuth(authBody("p.x:80", "p.x:80"),
				"malformed AUTH frame: address : 'p.x:80' (expected: an IP literal and a port)");
		assertMalformedAuth(authBody("p.x:80", "1.2.3.4:80").writeByte(0),
				"malformed AUTH frame: 1 trailing bytes after the last field");
		ByteBuf truncated = authBody("p.x:80", "");
		assertMalformedAuth(truncated.writerIndex(truncated.writerIndex() - 2),
				"malformed AUTH frame: address length needs 4 bytes but 2 remain (truncated body)");
		// The endpoint count is checked against the bytes present before anything is copied.
		ByteBuf lying = Unpooled.buffer().writeByte(1).writeZero(SharedSecret.NONCE_LENGTH).writeInt(1 << 20)
				.writeInt(5000).writeInt(200).writeZero(4);
		assertMalformedAuth(lying, "malformed AUTH frame: endpoint length : 200 (expected: 0..4)");
		assertThatThrownBy(() -> new DialledEndpoint("p.x:80", "p.x:80")).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("address : 'p.x:80' (expected: an IP literal and a port)");
	}

	/** @return an AUTH body (flags 1, zero nonce, 1 MiB frames, 5 s heartbeats) with these endpoint fields, as-is */
	private static ByteBuf authBody(String endpoint, String address) {
		ByteBuf body = Unpooled.buffer().writeByte(1).writeZero(SharedSecret.NONCE_LENGTH).writeInt(1 << 20)
				.writeInt(5000);
		byte[] e = endpoint.getBytes(StandardCharsets.UTF_8);
		byte[] a = address.getBytes(StandardCharsets.UTF_8);
		return body.writeInt(e.length).writeBytes(e).writeInt(a.length).writeBytes(a);
	}

	private static void assertMalformedAuth(ByteBuf body, String message) {
		try {
			assertThatThrownBy(() -> KVFrameCodec.decodeAuth(body)).isInstanceOf(ProtocolException.class)
					.hasMessage(message);
		}
		finally {
			assertThat(body.release()).isTrue();
		}
	}

	@Test
	void authBodyOfAnotherLengthIsMalformed() {
		ByteBuf shortBody = Unpooled.buffer().writeByte(1).writeZero(10);
		ByteBuf longProof = Unpooled.buffer().writeZero(SharedSecret.PROOF_LENGTH + 1);
		try {
			assertThatThrownBy(() -> KVFrameCodec.decodeAuth(shortBody)).isInstanceOf(ProtocolException.class)
					.hasMessage("malformed AUTH frame: nonce needs 32 bytes but 10 remain (truncated body)");
			assertThatThrownBy(() -> KVFrameCodec.decodeAuthProof(longProof)).isInstanceOf(ProtocolException.class)
					.hasMessage("malformed AUTH_PROOF frame: 1 trailing bytes after the last field");
		}
		finally {
			shortBody.release();
			longProof.release();
		}
	}

	@Test
	void abortAckHasTheDocumentedBytes() {
		ByteBuf frame = KVFrameCodec.encode(ALLOC, new KVMessage.AbortAck(0x0102030405060708L), 1024);
		try {
			assertThat(ByteBufUtil.hexDump(frame)).isEqualTo("00000009" + "07" + "0102030405060708");
		}
		finally {
			frame.release();
		}
	}

	@Test
	void renewAndTheLeaseOfHelloAckHaveTheDocumentedBytes() {
		ByteBuf renew = KVFrameCodec.encode(ALLOC, new KVMessage.Renew(new long[] { 0x0102030405060708L, -2 }), 1024);
		ByteBuf ack = KVFrameCodec.encode(ALLOC, new KVMessage.HelloAck(Samples.layout(0), 5, 6, 30_000), 1024);
		try {
			assertThat(ByteBufUtil.hexDump(renew)).isEqualTo("00000015" + "0c" + "00000002" + "0102030405060708"
					+ "fffffffffffffffe");
			// The body ends with token, incarnation and the lease in milliseconds.
			assertThat(ByteBufUtil.hexDump(ack)).endsWith("0000000000000005" + "0000000000000006"
					+ "0000000000007530");
		}
		finally {
			renew.release();
			ack.release();
		}
	}

	@Test
	void transferRequestEndsWithItsTraceContextAndDrainingCarriesItsReason() {
		ByteBuf traced = KVFrameCodec.encode(ALLOC, new KVMessage.TransferRequest(1, new int[] { 2 }, -1, new int[0],
				1, false, "00-ab"), 1024);
		ByteBuf untraced = KVFrameCodec.encode(ALLOC, new KVMessage.TransferRequest(1, new int[] { 2 }, -1,
				new int[0], 1, false), 1024);
		ByteBuf draining = KVFrameCodec.encode(ALLOC, new KVMessage.Draining("x"), 1024);
		ByteBuf prefixed = KVFrameCodec.encode(ALLOC, new KVMessage.TransferRequest(1, new int[] { 2 }, -1,
				new int[] { 3, 4 }, 1, false, "", 32, new int[] { 1, 1 }), 1024);
		try {
			String common = "04" + "0000000000000001" + "00000001" + "00000002" + "ffffffff" + "00000000" + "00000001"
					+ "00";
			// Since version 4 a request ends with decode's prefix (tokens) and its per-component state counts.
			assertThat(ByteBufUtil.hexDump(traced)).isEqualTo("00000031" + common + "00000005" + "30302d6162"
					+ "00000000" + "00000000" + "00" + "00");
			assertThat(ByteBufUtil.hexDump(untraced)).isEqualTo("0000002c" + common + "00000000" + "00000000"
					+ "00000000" + "00" + "00");
			assertThat(ByteBufUtil.hexDump(prefixed)).isEqualTo("0000003c" + "04" + "0000000000000001" + "00000001"
					+ "00000002" + "ffffffff" + "00000002" + "00000003" + "00000004" + "00000001" + "00" + "00000000"
					+ "00000020" + "00000002" + "00000001" + "00000001" + "00" + "00");
			assertThat(ByteBufUtil.hexDump(draining)).isEqualTo("00000006" + "08" + "00000001" + "78");
			assertThat(KVFrameCodec.typeName(KVFrameCodec.TYPE_DRAINING)).isEqualTo("DRAINING");
			assertThat(KVFrameCodec.isControlType(KVFrameCodec.TYPE_DRAINING)).isTrue();
		}
		finally {
			traced.release();
			untraced.release();
			prefixed.release();
			draining.release();
		}
	}

	@Test
	void statusAndAbortEndWithTheirFailureCodeAndRetryHint() {
		ByteBuf status = KVFrameCodec.encode(ALLOC, KVMessage.Status.failed(7, 2, FailureCause.OVERLOAD, "x", 250),
				1024);
		ByteBuf success = KVFrameCodec.encode(ALLOC, new KVMessage.Status(8, KVPoll.SUCCESS, 1, "", 64, 5, 0x02), 1024);
		ByteBuf abort = KVFrameCodec.encode(ALLOC, new KVMessage.Abort(9, "y", FailureCodes.code(FailureCause.ABORTED),
				0), 1024);
		try {
			assertThat(ByteBufUtil.hexDump(status)).isEqualTo("00000029" + "05" + "0000000000000007" + "00" + "00000002"
					+ "00000001" + "78" + "0000000000000000" + "ffffffffffffffff" + "00" + "0b" + "000000fa");
			assertThat(ByteBufUtil.hexDump(success)).isEqualTo("00000028" + "05" + "0000000000000008" + "04"
					+ "00000001" + "00000000" + "0000000000000040" + "0000000000000005" + "02" + "00" + "00000000");
			assertThat(ByteBufUtil.hexDump(abort)).isEqualTo("00000013" + "06" + "0000000000000009" + "00000001" + "79"
					+ "02" + "00000000");
		}
		finally {
			status.release();
			success.release();
			abort.release();
		}
	}

	@Test
	void everyFailureCodeRoundTripsThroughStatusAndAbort() {
		for (FailureCause cause : FailureCause.values()) {
			int code = FailureCodes.code(cause);
			int hint = cause == FailureCause.OVERLOAD ? 300_000 : 0;
			for (KVMessage m : new KVMessage[] { KVMessage.Status.failed(1, 3, cause, cause.tag(), hint),
					new KVMessage.Abort(2, cause.tag(), code, hint) }) {
				ByteBuf frame = KVFrameCodec.encode(ALLOC, m, 1024);
				try {
					frame.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH - 1);
					KVMessage read = KVFrameCodec.decode(frame.readUnsignedByte(), frame);
					assertThat(read).isEqualTo(m);
					FailureCause arrived = read instanceof KVMessage.Status s ? s.cause()
							: ((KVMessage.Abort) read).cause();
					assertThat(arrived).isEqualTo(cause == FailureCause.OTHER ? FailureCause.PEER_FAILED : cause);
				}
				finally {
					frame.release();
				}
			}
		}
	}

	@Test
	void dataHeaderRoundTripsWithTheDocumentedLayout() {
		DataHeader header = new DataHeader(7, RegionKind.STATE, 3, 1L << 40, 256, 1024, 4);
		ByteBuf buf = KVFrameCodec.encodeDataHeader(ALLOC, header);
		try {
			assertThat(buf.readableBytes())
					.isEqualTo(KVFrameCodec.FRAME_PREFIX_LENGTH + KVFrameCodec.DATA_HEADER_LENGTH);
			assertThat(buf.readUnsignedInt()).isEqualTo(1 + KVFrameCodec.DATA_HEADER_LENGTH + 1024);
			assertThat(buf.readUnsignedByte()).isEqualTo((short) KVFrameCodec.TYPE_DATA);
			assertThat(buf.getByte(buf.readerIndex() + 8)).isEqualTo((byte) 2);
			assertThat(KVFrameCodec.decodeDataHeader(buf)).isEqualTo(header);
		}
		finally {
			buf.release();
		}
	}

	@Test
	void oversizedMessageIsRefusedBeforeAllocating() {
		KVMessage big = new KVMessage.TransferRequest(1, new int[1000], 0, new int[0], 1, false);
		assertThatThrownBy(() -> KVFrameCodec.encode(ALLOC, big, 1024))
				.isInstanceOf(KVFerryException.class)
				.hasMessageContaining("exceeds maxFrameLength 1024");
	}

	@Test
	void bodyWithTrailingBytesIsMalformed() {
		ByteBuf body = Unpooled.buffer().writeLong(5).writeByte(0);
		try {
			assertThatThrownBy(() -> KVFrameCodec.decode(KVFrameCodec.TYPE_ABORT_ACK, body))
					.isInstanceOf(ProtocolException.class)
					.hasMessage("malformed ABORT_ACK frame: 1 trailing bytes after the last field");
		}
		finally {
			body.release();
		}
	}

	@Test
	void valuesTheRecordsRejectAreMalformed() {
		ByteBuf status = Unpooled.buffer().writeLong(1).writeByte(9).writeInt(0).writeInt(0);
		ByteBuf dataHeader = Unpooled.buffer().writeLong(1).writeByte(3).writeInt(0).writeLong(0).writeInt(1)
				.writeLong(1).writeInt(1);
		// A Success naming a fence on stripe 0, which never fences.
		ByteBuf fences = Unpooled.buffer().writeLong(1).writeByte(KVPoll.SUCCESS.code()).writeInt(0).writeInt(0)
				.writeLong(64).writeLong(-1).writeByte(0x03).writeByte(0).writeInt(0);
		try {
			assertThatThrownBy(() -> KVFrameCodec.decode(KVFrameCodec.TYPE_STATUS, status))
					.isInstanceOf(ProtocolException.class)
					.hasMessageContaining("malformed STATUS frame: KVPoll code : 9");
			assertThatThrownBy(() -> KVFrameCodec.decode(KVFrameCodec.TYPE_STATUS, fences))
					.isInstanceOf(ProtocolException.class)
					.hasMessageContaining("malformed STATUS frame: status : fences=0x3 (expected: bits of stripes 1..7)");
			assertThatThrownBy(() -> KVFrameCodec.decodeDataHeader(dataHeader))
					.isInstanceOf(ProtocolException.class)
					.hasMessageContaining("kind : 3 (expected: 0..2)");
		}
		finally {
			status.release();
			dataHeader.release();
			fences.release();
		}
	}
}
