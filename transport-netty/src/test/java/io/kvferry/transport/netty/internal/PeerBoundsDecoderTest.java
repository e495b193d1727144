package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PeerLayout;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.Recorder;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.Stream;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Every number a peer announces in a frame has a floor and a ceiling that the receiver checks as it decodes, fed byte
 * by byte (frames of thousands of entries in odd-sized pieces): a value at each bound is read, one past it closes the
 * connection naming the frame, the field and the bounds (a retry hint past its ceiling is read as the ceiling, since
 * it only advises). The table of bounds is in the protocol documentation; the bounds of data frames, scatter lists,
 * renewals and the same-host frames have their own tests beside their codecs.
 */
class PeerBoundsDecoderTest {

	private static final int MAX = 1 << 20;

	private final List<ByteBuf> fed = new ArrayList<>();
	private Recorder recorder;

	@AfterEach
	void everyInputBufferIsReleased() {
		assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).isZero());
	}

	@Test
	void aHeartbeatIntervalIsTenMillisecondsToTenMinutes() {
		assertRead(auth(10), new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 1 << 20, 10,
				DialledEndpoint.NONE));
		assertRead(auth(600_000), new KVFrameCodec.Auth(false, new byte[SharedSecret.NONCE_LENGTH], 1 << 20, 600_000,
				DialledEndpoint.NONE));
		for (int millis : new int[] { 9, 0, -1, 600_001 }) {
			assertMalformed(auth(millis), "malformed AUTH frame: heartbeatMillis : " + millis + " (expected: "
					+ "10..600000)");
		}
	}

	@Test
	void aLeaseIsNoneOrOneSecondToAnHour() {
		for (long lease : new long[] { 0, 1000, 3_600_000 }) {
			assertThat(((KVMessage.HelloAck) readOne(helloAck(layout(), lease))).leaseMillis()).isEqualTo(lease);
		}
		for (long lease : new long[] { 1, 999, 3_600_001, -1, Long.MAX_VALUE }) {
			assertMalformed(helloAck(layout(), lease), "malformed HELLO_ACK frame: leaseMillis : " + lease
					+ " (expected: 0 for none, or 1000..3600000)");
		}
	}

	@Test
	void aFailureCodeIsAnyByteAndACodeThisReleaseDoesNotKnowIsThePeersFailure() {
		KVMessage.Status unknown = (KVMessage.Status) readOne(status(KVPoll.FAILED, 200, 0));
		assertThat(unknown.code()).isEqualTo(200);
		assertThat(unknown.cause()).isEqualTo(FailureCause.PEER_FAILED);
		KVMessage.Status lease = (KVMessage.Status) readOne(status(KVPoll.FAILED, 14, 0));
		assertThat(lease.cause()).isEqualTo(FailureCause.LEASE_EXPIRED);
		assertMalformed(status(KVPoll.SUCCESS, 11, 0), "malformed STATUS frame: status : Success with code=11 "
				+ "retryAfterMillis=0 (expected: 0 and 0)");
	}

	@Test
	void aRetryHintIsNotNegativeAndOneAboveFiveMinutesIsReadAsFiveMinutes() {
		assertThat(((KVMessage.Status) readOne(status(KVPoll.FAILED, 11, 300_000))).retryAfterMillis())
				.isEqualTo(300_000);
		assertThat(((KVMessage.Status) readOne(status(KVPoll.FAILED, 11, Integer.MAX_VALUE))).retryAfterMillis())
				.isEqualTo(KVMessage.MAX_RETRY_AFTER_MILLIS);
		assertMalformed(status(KVPoll.FAILED, 11, -1),
				"malformed STATUS frame: retryAfterMillis : -1 (expected: >= 0)");
		assertThat(((KVMessage.Abort) readOne(abort(11, 300_001))).retryAfterMillis()).isEqualTo(300_000);
		assertMalformed(abort(11, -5), "malformed ABORT frame: retryAfterMillis : -5 (expected: >= 0)");
	}

	@Test
	void aReasonIsAtMostEightKibibytes() {
		String longest = "x".repeat(KVMessage.MAX_REASON_BYTES);
		KVMessage.Reject read = (KVMessage.Reject) readOne(frame(KVFrameCodec.TYPE_REJECT,
				Unpooled.wrappedBuffer(string(longest))));
		assertThat(read.reason()).isEqualTo(longest);
		String over = longest + "x";
		assertMalformed(frame(KVFrameCodec.TYPE_REJECT, Unpooled.wrappedBuffer(string(over))),
				"malformed REJECT frame: reason length : 8193 (expected: 0..8192)");
		assertMalformed(frame(KVFrameCodec.TYPE_DRAINING, Unpooled.wrappedBuffer(string(over))),
				"malformed DRAINING frame: reason length : 8193 (expected: 0..8192)");
		assertMalformed(frame(KVFrameCodec.TYPE_ABORT, Unpooled.buffer().writeLong(1).writeBytes(string(over))
				.writeByte(2).writeInt(0)), "malformed ABORT frame: reason length : 8193 (expected: 0..8192)");
		assertMalformed(frame(KVFrameCodec.TYPE_STATUS, Unpooled.buffer().writeLong(1).writeByte(0).writeInt(0)
				.writeBytes(string(over))), "malformed STATUS frame: reason length : 8193 (expected: 0..8192)");
	}

	@Test
	void aLayoutsSizesCountsAndNamesAreBounded() {
		Layout ok = new Layout();
		assertThat(((KVMessage.HelloAck) readOne(helloAck(ok, 0))).layout().modelId()).isEqualTo("m@1");
		Layout edge = new Layout();
		edge.tpSize = PeerLayout.MAX_SIZE;
		edge.pageSize = PeerLayout.MAX_SIZE;
		edge.heads = PeerLayout.MAX_SIZE;
		edge.totalHeads = PeerLayout.MAX_SIZE;
		edge.kvRegions = PeerLayout.MAX_REGIONS;
		edge.dtype = "d".repeat(PeerLayout.MAX_DTYPE_BYTES);
		edge.modelId = "m".repeat(PeerLayout.MAX_MODEL_ID_BYTES);
		edge.modelLayers = PeerLayout.MAX_SIZE;
		edge.kvLayout = 1;
		PeerLayout read = ((KVMessage.HelloAck) readOne(helloAck(edge, 0))).layout();
		assertThat(read.kv()).hasSize(PeerLayout.MAX_REGIONS);
		assertThat(read.modelLayers()).isEqualTo(PeerLayout.MAX_SIZE);

		assertMalformedLayout(l -> l.tpSize = PeerLayout.MAX_SIZE + 1, "make 65537 ranks (expected: at most 65536)");
		assertMalformedLayout(l -> l.pageSize = PeerLayout.MAX_SIZE + 1, "pageSize=65537");
		assertMalformedLayout(l -> l.pageSize = 0, "pageSize=0");
		assertMalformedLayout(l -> l.heads = 9, "kvHeads=9/8");
		assertMalformedLayout(l -> l.totalHeads = l.heads = PeerLayout.MAX_SIZE + 1, "kvHeads=65537/65537");
		assertMalformedLayout(l -> l.kvRegions = PeerLayout.MAX_REGIONS + 1, "kv count : 8193 (expected: 0..8192)");
		assertMalformedLayout(l -> l.dtype = "d".repeat(PeerLayout.MAX_DTYPE_BYTES + 1),
				"dtype length : 65 (expected: 0..64)");
		assertMalformedLayout(l -> l.modelId = "m".repeat(PeerLayout.MAX_MODEL_ID_BYTES + 1),
				"modelId length : 257 (expected: 0..256)");
		assertMalformedLayout(l -> l.modelId = "m\n", "modelId : a control character at index 1 (expected: none)");
		assertMalformedLayout(l -> l.modelLayers = PeerLayout.MAX_SIZE + 1, "modelLayers=65537");
		assertMalformedLayout(l -> l.kvLayout = 2, "kvLayout : 2 (expected: 0..1)");
		assertMalformedLayout(l -> l.engineRank = -1, "engineRank=-1");
		assertMalformedLayout(l -> l.itemCount = (1L << 31) + 1, "itemCount=2147483649");
		assertMalformedLayout(l -> l.itemCount = 0, "itemCount=0");
		assertMalformedLayout(l -> l.stateKind = 3, "stateKinds : 3 (expected: 0..2)");
		assertMalformedLayout(l -> {
			l.stateKind = 0;
			l.stateTpDim = 0;
		}, "stateTpDims [0] (expected: >= 1)");
		assertMalformedLayout(l -> l.stateTpDim = 1, "0 state kinds and 1 state TP dims for 0 state regions");
		Layout state = new Layout();
		state.stateKind = 2;
		state.itemCount = 1L << 31;
		assertThat(((KVMessage.HelloAck) readOne(helloAck(state, 0))).layout().stateKinds()).hasSize(1);
	}

	@Test
	void aTransferRequestsTraceContextStateCountsAndRequiredRanksAreBounded() {
		assertThat(((KVMessage.TransferRequest) readOne(request(1024, 65_536, 8192))).requiredDstInfoNum())
				.isEqualTo(65_536);
		assertMalformed(request(1025, 1, 0),
				"malformed TRANSFER_REQUEST frame: traceContext length : 1025 (expected: 0..1024)");
		assertMalformed(request(0, 0, 0),
				"malformed TRANSFER_REQUEST frame: requiredDstInfoNum : 0 (expected: 1..65536)");
		assertMalformed(request(0, 65_537, 0),
				"malformed TRANSFER_REQUEST frame: requiredDstInfoNum : 65537 (expected: 1..65536)");
		assertMalformed(request(0, 1, 8193),
				"malformed TRANSFER_REQUEST frame: stateCounts count : 8193 (expected: 0..8192)");
	}

	// ---- frames ---------------------------------------------------------------------------------------------------

	private static byte[] auth(int heartbeatMillis) {
		return new Stream().preface(KVMessage.PROTOCOL_VERSION).frame(KVFrameCodec.TYPE_AUTH, Unpooled.buffer()
				.writeByte(0).writeZero(SharedSecret.NONCE_LENGTH).writeInt(1 << 20).writeInt(heartbeatMillis)
				.writeInt(0).writeInt(0)).bytes();
	}

	private static byte[] helloAck(Layout layout, long lease) {
		return frame(KVFrameCodec.TYPE_HELLO_ACK, layout.write(Unpooled.buffer()).writeLong(0).writeLong(0)
				.writeLong(lease));
	}

	private static Layout layout() {
		return new Layout();
	}

	private static byte[] status(KVPoll status, int code, int retryAfterMillis) {
		return frame(KVFrameCodec.TYPE_STATUS, Unpooled.buffer().writeLong(7).writeByte(status.code()).writeInt(0)
				.writeBytes(string(status == KVPoll.SUCCESS ? "" : "full")).writeLong(0).writeLong(-1).writeByte(0)
				.writeByte(code).writeInt(retryAfterMillis));
	}

	private static byte[] abort(int code, int retryAfterMillis) {
		return frame(KVFrameCodec.TYPE_ABORT, Unpooled.buffer().writeLong(7).writeBytes(string("full"))
				.writeByte(code).writeInt(retryAfterMillis));
	}

	private static byte[] request(int traceBytes, int required, int stateCounts) {
		ByteBuf body = Unpooled.buffer().writeLong(1).writeInt(0).writeInt(-1).writeInt(0).writeInt(required)
				.writeByte(1).writeBytes(string("t".repeat(traceBytes))).writeInt(0).writeInt(stateCounts);
		return frame(KVFrameCodec.TYPE_TRANSFER_REQUEST, body.writeZero(4 * stateCounts).writeByte(0).writeByte(0));
	}

	private static byte[] frame(int type, ByteBuf body) {
		return new Stream().preface(KVMessage.PROTOCOL_VERSION).frame(type, body).bytes();
	}

	/** @return a {@code string} field: its byte count, then its UTF-8 */
	private static byte[] string(String s) {
		byte[] b = s.getBytes(StandardCharsets.UTF_8);
		byte[] field = new byte[4 + b.length];
		field[0] = (byte) (b.length >>> 24);
		field[1] = (byte) (b.length >>> 16);
		field[2] = (byte) (b.length >>> 8);
		field[3] = (byte) b.length;
		System.arraycopy(b, 0, field, 4, b.length);
		return field;
	}

	/** A layout's fields, written in the order of the {@code layout} field of {@code HELLO} and {@code HELLO_ACK}. */
	private static final class Layout {
		int engineRank;
		int tpSize = 1;
		int pageSize = 4;
		String dtype = "bf16";
		int heads = 8;
		int totalHeads = 8;
		int kvRegions = 2;
		long itemCount = 16;
		int stateKind = -1;
		int stateTpDim = -1;
		String modelId = "m@1";
		int modelLayers = 1;
		int kvLayout;

		ByteBuf write(ByteBuf b) {
			b.writeInt(engineRank).writeInt(tpSize).writeInt(0).writeInt(1).writeInt(0).writeInt(1).writeInt(0)
					.writeInt(1).writeInt(0).writeInt(pageSize).writeByte(0).writeBytes(string(dtype)).writeInt(heads)
					.writeInt(totalHeads).writeInt(0).writeInt(0).writeInt(kvRegions);
			for (int i = 0; i < kvRegions; i++) {
				b.writeInt(4096).writeLong(itemCount);
			}
			// No aux regions; one state region of the given kind, or none.
			b.writeInt(0);
			if (stateKind < 0) {
				b.writeInt(0).writeInt(1).writeInt(0).writeInt(0);
			}
			else {
				b.writeInt(1).writeInt(64).writeLong(4).writeInt(1).writeInt(0).writeInt(1).writeInt(stateKind);
			}
			if (stateTpDim < 0) {
				b.writeInt(0);
			}
			else {
				b.writeInt(1).writeInt(stateTpDim);
			}
			return b.writeByte(0).writeByte(0).writeBytes(string(modelId)).writeInt(modelLayers).writeByte(kvLayout);
		}
	}

	// ---- decoding -------------------------------------------------------------------------------------------------

	private void assertMalformedLayout(Consumer<Layout> change, String detail) {
		Layout l = new Layout();
		change.accept(l);
		assertMalformed(helloAck(l, 0), "malformed HELLO_ACK frame: ");
		assertThat(recorder.failure.getMessage()).contains(detail);
	}

	private Object readOne(byte[] stream) {
		feed(stream);
		assertThat(recorder.failure).as("decoding failure").isNull();
		assertThat(recorder.events).hasSize(2);
		return recorder.events.get(1);
	}

	private void assertRead(byte[] stream, Object expected) {
		assertThat(readOne(stream)).isEqualTo(expected);
	}

	private void assertMalformed(byte[] stream, String message) {
		feed(stream);
		assertThat(recorder.failure).as("a failure for %s", message).isNotNull();
		assertThat(recorder.failure.getMessage()).startsWith(message);
		assertThat(recorder.failures).isEqualTo(1);
	}

	/**
	 * Feeds a new decoder {@code stream} one byte at a time; a stream of a frame larger than a few KiB (thousands of
	 * regions or counts) in pieces of an odd size, which still cut every field somewhere.
	 */
	private void feed(byte[] stream) {
		recorder = new Recorder();
		EmbeddedChannel channel = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX, recorder));
		int size = stream.length > 4096 ? 509 : 1;
		try {
			for (int i = 0; i < stream.length && channel.isOpen(); i += size) {
				ByteBuf piece = Unpooled.wrappedBuffer(stream, i, Math.min(size, stream.length - i));
				fed.add(piece);
				channel.writeInbound(piece);
			}
			channel.runPendingTasks();
			if (recorder.failure != null) {
				assertThat(channel.isOpen()).as("closed on a malformed frame").isFalse();
			}
		}
		finally {
			channel.finishAndReleaseAll();
		}
	}
}
