package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import io.kvferry.RoomClaim;
import io.kvferry.spi.KVMessage;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A {@code TRANSFER_REQUEST}'s claim through the decoder on an {@link EmbeddedChannel}: the documented bytes fed one by
 * one, and a claim part of any length but 0 or 32 bytes refused naming the field.
 */
class ClaimFrameDecoderTest {

	private static final String PREFACE = "4b564652" + String.format("%04x", KVMessage.PROTOCOL_VERSION);
	private static final int MAX = 1024;
	// Room 1, page 2, no aux row, no state, one decode rank, not a dummy, no trace context, no prefix, no counts.
	private static final String BODY = "04" + "0000000000000001" + "00000001" + "00000002" + "ffffffff" + "00000000"
			+ "00000001" + "00" + "00000000" + "00000000" + "00000000";

	private final List<ByteBuf> fed = new ArrayList<>();

	@AfterEach
	void everyInputBufferIsReleased() {
		assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).isZero());
	}

	@Test
	void aRequestEndsWithItsClaimsProofAndHandoffFedByteByByte() {
		byte[] proof = new byte[32];
		byte[] handoff = new byte[32];
		for (int i = 0; i < 32; i++) {
			proof[i] = (byte) i;
			handoff[i] = (byte) (0xff - i);
		}
		KVMessage.TransferRequest req = new KVMessage.TransferRequest(1, new int[] { 2 }, -1, new int[0], 1, false,
				"", 0, new int[0], new RoomClaim(proof, handoff));
		ByteBuf encoded = KVFrameCodec.encode(Unpooled.buffer().alloc(), req, MAX);
		String frame = String.format("%08x", 42 + 66) + BODY + "20" + ByteBufUtil.hexDump(proof) + "20"
				+ ByteBufUtil.hexDump(handoff);
		try {
			assertThat(ByteBufUtil.hexDump(encoded)).isEqualTo(frame);
		}
		finally {
			encoded.release();
		}
		KVFrameDecoderTest.Recorder recorder = new KVFrameDecoderTest.Recorder();
		EmbeddedChannel channel = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		try {
			for (byte b : ByteBufUtil.decodeHexDump(PREFACE + frame)) {
				ByteBuf piece = Unpooled.wrappedBuffer(new byte[] { b });
				fed.add(piece);
				channel.writeInbound(piece);
			}
			assertThat(recorder.failure).isNull();
			assertThat(recorder.events).containsExactly("PREFACE " + KVMessage.PROTOCOL_VERSION, req);
			KVMessage.TransferRequest read = (KVMessage.TransferRequest) recorder.events.get(1);
			assertThat(read.claim().proof()).containsExactly(proof);
			assertThat(read.claim().handoff()).containsExactly(handoff);
		}
		finally {
			channel.finishAndReleaseAll();
		}
	}

	@Test
	void aClaimPartOfAnotherLengthIsMalformedNamingTheField() {
		assertMalformed("00" + "01" + "ab", "malformed TRANSFER_REQUEST frame: claimHandoff : 1 bytes (expected: 0 or 32)");
		assertMalformed("21" + "00".repeat(33) + "00",
				"malformed TRANSFER_REQUEST frame: claimProof : 33 bytes (expected: 0 or 32)");
		assertMalformed("20" + "00".repeat(31), "claimProof needs 32 bytes but 31 remain (truncated body)");
		assertMalformed("00", "claimHandoff needs 1 bytes but 0 remain (truncated body)");
	}

	private void assertMalformed(String claim, String message) {
		KVFrameDecoderTest.Recorder r = new KVFrameDecoderTest.Recorder();
		EmbeddedChannel channel = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, r));
		try {
			String body = BODY + claim;
			ByteBuf in = Unpooled.wrappedBuffer(ByteBufUtil.decodeHexDump(PREFACE + String.format("%08x",
					body.length() / 2) + body));
			fed.add(in);
			channel.writeInbound(in);
			assertThat(r.failure).as(claim).isNotNull();
			assertThat(r.failure.getMessage()).contains(message);
			assertThat(r.events).containsExactly("PREFACE " + KVMessage.PROTOCOL_VERSION);
		}
		finally {
			channel.finishAndReleaseAll();
		}
	}
}
