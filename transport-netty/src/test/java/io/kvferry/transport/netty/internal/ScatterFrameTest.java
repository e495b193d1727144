package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.NativeMemory;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.ScatterBlock;
import io.kvferry.spi.ScatterHeader;
import io.kvferry.spi.SendGate;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.CollectingSink;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.Recorder;
import io.kvferry.transport.netty.internal.KVFrameDecoderTest.Stream;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code DATA_SCATTER} frames end to end through the codec: made by {@link ScatterCursor} from source memory (the
 * pieces wrapped in place), read by {@link KVFrameDecoder} on an {@link EmbeddedChannel} one byte at a time, and every
 * malformed list refused before any piece reaches the listener, with a reason naming the piece and the problem.
 */
class ScatterFrameTest {

	private static final int MAX = 1 << 20;

	private final Recorder recorder = new Recorder();
	private final EmbeddedChannel channel = new EmbeddedChannel(new KVFrameDecoder(1, MAX, recorder));
	private final List<ByteBuf> fed = new ArrayList<>();
	private final ByteBuf source = Unpooled.directBuffer(8192, 8192);
	private final Map<DataHeader, CollectingSink> sinks = new HashMap<>();

	ScatterFrameTest() {
		byte[] bytes = new byte[8192];
		new Random(8).nextBytes(bytes);
		source.writeBytes(bytes);
		recorder.sinks = h -> sinks.computeIfAbsent(h, k -> new CollectingSink());
	}

	@AfterEach
	void everyBufferIsReleased() {
		channel.finishAndReleaseAll();
		assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).isZero());
		source.release();
	}

	@Test
	void piecesGatheredInPlaceArriveFedByteByByteEachAtItsOwnPlace() {
		// Pieces 0 and 1 are adjacent in the source, so they share one wrapper; regions ascend, offsets within one.
		ScatterBlock block = block(new int[] { 0, 0, 1, 3 }, new long[] { 64, 4096, 0, 2048 },
				new int[] { 100, 28, 2048, 1 }, new long[] { 0, 100, 512, 4000 });
		ScatterCursor cursor = new ScatterCursor(block, MAX, false);
		assertThat(cursor.takeSingle()).isNull();
		CompositeByteBuf frame = frame(cursor);
		assertThat(cursor.hasNext()).isFalse();
		assertThat(cursor.framePayload()).isEqualTo(2177);
		assertThat(frame.numComponents()).as("header, pieces 0+1, 2, 3").isEqualTo(4);
		assertThat(frame.component(1).memoryAddress()).as("pieces wrapped in place").isEqualTo(block.srcAddress(0));

		feed(new Stream().preface(1).raw(bytes(frame)).message(new KVMessage.AbortAck(5)).bytes(), 1);

		assertThat(recorder.failure).isNull();
		List<Object> expected = new ArrayList<>(List.of("PREFACE 1"));
		for (int i = 0; i < 4; i++) {
			expected.add(block.header().piece(i));
		}
		for (int i = 0; i < 4; i++) {
			expected.add("COMPLETE");
		}
		expected.add(new KVMessage.AbortAck(5));
		assertThat(recorder.events).as("every piece is asked for before any byte is written")
				.containsExactlyElementsOf(expected);
		for (int i = 0; i < 4; i++) {
			CollectingSink sink = sinks.get(block.header().piece(i));
			assertThat(sink.bytes.toByteArray()).isEqualTo(sourceBytes(block.srcAddress(i), block.header().length(i)));
			assertThat(sink.segmentSizes).containsOnly(1);
		}
	}

	@Test
	void piecesGatheredFromAStridedSourceArriveFedByteByByteEachAtItsOwnPlace() {
		// Piece 0 is contiguous; pieces 1 and 2 are gathered from 4 chunks of 64 bytes, 256 bytes apart (a head's
		// tokens in a token-major page), and share one staging slice; piece 3 is contiguous again.
		long base = source.memoryAddress();
		int[] regions = { 0, 0, 0, 2 };
		long[] offsets = { 0, 100, 356, 0 };
		int[] lengths = { 100, 256, 256, 30 };
		long[] src = { base, base + 64, base + 128, base + 7000 };
		long[] strides = { 100, 256, 256, 30 };
		int[] chunks = { 100, 64, 64, 30 };
		ScatterBlock block = new ScatterBlock(new ScatterHeader(5, RegionKind.KV, 4, regions, offsets, lengths), src,
				strides, chunks, SendGate.OPEN);
		ScatterCursor cursor = new ScatterCursor(block, MAX, false);
		assertThat(cursor.takeSingle()).isNull();
		CompositeByteBuf frame = frame(cursor);
		assertThat(cursor.framePayload()).isEqualTo(642);
		assertThat(frame.numComponents()).as("header, piece 0, pieces 1+2 staged, 3").isEqualTo(4);

		feed(new Stream().preface(1).raw(bytes(frame)).bytes(), 1);

		assertThat(recorder.failure).isNull();
		for (int i = 0; i < 4; i++) {
			byte[] expected = new byte[lengths[i]];
			for (int off = 0; off < lengths[i]; off += chunks[i]) {
				System.arraycopy(sourceBytes(src[i] + off / chunks[i] * strides[i], chunks[i]), 0, expected, off,
						chunks[i]);
			}
			assertThat(sinks.get(block.header().piece(i)).bytes.toByteArray()).as("piece " + i).isEqualTo(expected);
		}
	}

	@Test
	void aSmallFrameLimitCutsTheBlockAndAPieceLargerThanAFrameGoesAlone() {
		ScatterBlock block = block(new int[] { 0, 0, 0, 0 }, new long[] { 0, 600, 1200, 4000 },
				new int[] { 500, 500, 2000, 300 }, new long[] { 0, 500, 1000, 3000 });
		ScatterCursor cursor = new ScatterCursor(block, 1024, false);
		ByteBuf first = frame(cursor);
		assertThat(cursor.framePayload()).as("pieces 0 and 1").isEqualTo(1000);
		DataBlock alone = cursor.takeSingle();
		assertThat(alone).isNotNull();
		assertThat(alone.header()).isEqualTo(block.header().piece(2));
		assertThat(cursor.takeSingle()).isNull();
		ByteBuf last = frame(cursor);
		assertThat(cursor.framePayload()).isEqualTo(300);
		assertThat(cursor.hasNext()).isFalse();
		assertThat(cursor.remainingBytes()).isZero();

		feed(new Stream().preface(1).raw(bytes(first)).raw(bytes(last)).bytes(), 3);

		assertThat(recorder.failure).isNull();
		assertThat(recorder.events).containsExactly("PREFACE 1", block.header().piece(0), block.header().piece(1),
				"COMPLETE", "COMPLETE", block.header().piece(3), "COMPLETE");
	}

	@Test
	void onASameHostRingEveryPieceGoesAlone() {
		ScatterBlock block = block(new int[] { 0, 1 }, new long[] { 0, 0 }, new int[] { 10, 20 }, new long[] { 0, 10 });
		ScatterCursor cursor = new ScatterCursor(block, MAX, true);
		assertThat(cursor.takeSingle().header()).isEqualTo(block.header().piece(0));
		assertThat(cursor.takeSingle().header()).isEqualTo(block.header().piece(1));
		assertThat(cursor.hasNext()).isFalse();
	}

	@Test
	void overlappingPiecesAreRefusedBeforeAnyPieceIsAskedFor() {
		refused(table(7, 0, new int[] { 2, 2 }, new long[] { 0, 50 }, new int[] { 64, 64 }),
				"malformed scatter list of room 7: piece 1 of 2: KV region 2 bytes [50, 114) overlaps piece 0 at KV "
						+ "region 2 bytes [0, 64) (bytes [50, 64) written twice)");
	}

	@Test
	void aDuplicatedPieceIsRefused() {
		refused(table(7, 0, new int[] { 1, 1 }, new long[] { 64, 64 }, new int[] { 32, 32 }),
				"piece 1 of 2: KV region 1 bytes [64, 96) duplicates piece 0");
	}

	@Test
	void piecesOutOfOrderAreRefused() {
		refused(table(7, 0, new int[] { 0, 0 }, new long[] { 64, 0 }, new int[] { 32, 32 }),
				"piece 1 of 2: KV region 0 bytes [0, 32) comes after piece 0 at KV region 0 bytes [64, 96) (expected: "
						+ "pieces in ascending order of region, then offset)");
		refused(table(7, 0, new int[] { 1, 0 }, new long[] { 0, 0 }, new int[] { 32, 32 }), "comes after piece 0");
	}

	@Test
	void aPieceWhoseEndOverflows64BitsIsRefused() {
		refused(table(7, 0, new int[] { 0 }, new long[] { Long.MAX_VALUE - 10 }, new int[] { 32 }),
				"piece 0 of 1: bytes [9223372036854775797, 9223372036854775797 + 32) end beyond 2^63");
	}

	@Test
	void negativeAndEmptyPiecesAreRefused() {
		refused(table(7, 0, new int[] { 0 }, new long[] { -1 }, new int[] { 32 }), "offset -1");
		refused(table(7, 0, new int[] { -3 }, new long[] { 0 }, new int[] { 32 }), "region -3");
		refused(table(7, 0, new int[] { 0, 0 }, new long[] { 0, 32 }, new int[] { 32, 0 }), "length 0");
	}

	@Test
	void lengthsThatDoNotSumToThePayloadAreRefused() {
		ByteBuf body = table(7, 0, new int[] { 0, 0 }, new long[] { 0, 32 }, new int[] { 32, 32 });
		body.writerIndex(body.writerIndex() - 1);
		refused(body, "its 2 pieces sum to 64 bytes but the frame carries 63");
	}

	@Test
	void pieceCountsOutOfBoundsAreRefusedBeforeTheTableIsBuffered() {
		ByteBuf none = Unpooled.buffer().writeLong(7).writeByte(0).writeInt(0).writeZero(40);
		refused(none, "malformed DATA_SCATTER frame: pieces : 0 (expected: 1..4096)");
		ByteBuf many = Unpooled.buffer().writeLong(7).writeByte(0).writeInt(4097).writeZero(40);
		refused(many, "pieces : 4097 (expected: 1..4096)");
		ByteBuf more = Unpooled.buffer().writeLong(7).writeByte(0).writeInt(2).writeZero(33);
		refused(more, "body of 46 bytes leaves 1 payload bytes for 2 pieces (expected: 2..1048576)");
		ByteBuf kind = table(7, 3, new int[] { 0 }, new long[] { 0 }, new int[] { 32 });
		refused(kind, "malformed DATA_SCATTER frame: kind : 3 (expected: 0..2)");
	}

	@Test
	void aFrameLengthBeyondItsBoundIsRefusedAtItsPrefix() {
		feed(new Stream().preface(1).raw(0x7f, 0xff, 0xff, 0xff, KVFrameCodec.TYPE_DATA_SCATTER).bytes(), 1);
		assertThat(recorder.failure).hasMessageStartingWith("malformed DATA_SCATTER frame: length 2147483647 "
				+ "(expected: 31..");
		assertThat(channel.isOpen()).isFalse();
	}

	@Test
	void aStreamThatEndsInsideAScatterFrameIsReported() {
		ByteBuf body = table(7, 0, new int[] { 0 }, new long[] { 0 }, new int[] { 32 });
		byte[] stream = new Stream().preface(1).frame(KVFrameCodec.TYPE_DATA_SCATTER, body).bytes();
		feed(Arrays.copyOf(stream, stream.length - 5), 4);
		channel.finish();
		assertThat(recorder.failure).hasMessage("connection closed in the middle of a DATA_SCATTER frame");
	}

	/** A scatter frame body with the given table and as many payload bytes as the lengths sum to (when positive). */
	private static ByteBuf table(long room, int kind, int[] regions, long[] offsets, int[] lengths) {
		ByteBuf body = Unpooled.buffer().writeLong(room).writeByte(kind).writeInt(regions.length);
		long payload = 0;
		for (int i = 0; i < regions.length; i++) {
			body.writeInt(regions[i]).writeLong(offsets[i]).writeInt(lengths[i]);
			payload += Math.max(0, lengths[i]);
		}
		return body.writeZero((int) payload);
	}

	/** @return the cursor's next frame, its buffers (which it writes one after the other) as one composite */
	private static CompositeByteBuf frame(ScatterCursor cursor) {
		int parts = cursor.nextFrame(UnpooledByteBufAllocator.DEFAULT);
		CompositeByteBuf frame = Unpooled.compositeBuffer(parts);
		for (int i = 0; i < parts; i++) {
			frame.addComponent(true, cursor.part(i));
		}
		return frame;
	}

	private void refused(ByteBuf body, String reason) {
		Recorder r = new Recorder();
		r.sinks = recorder.sinks;
		EmbeddedChannel c = new EmbeddedChannel(new KVFrameDecoder(1, MAX, r));
		try {
			ByteBuf in = Unpooled.wrappedBuffer(new Stream().preface(1).frame(KVFrameCodec.TYPE_DATA_SCATTER, body)
					.bytes());
			fed.add(in);
			c.writeInbound(in);
			assertThat(r.failure).isNotNull();
			assertThat(r.failure.getMessage()).contains(reason);
			assertThat(r.failures).isEqualTo(1);
			assertThat(r.events).as("no piece reached the listener").containsExactly("PREFACE 1");
			assertThat(c.isOpen()).isFalse();
		}
		finally {
			c.finishAndReleaseAll();
		}
	}

	private ScatterBlock block(int[] regions, long[] offsets, int[] lengths, long[] sourceOffsets) {
		long[] src = new long[sourceOffsets.length];
		for (int i = 0; i < src.length; i++) {
			src[i] = source.memoryAddress() + sourceOffsets[i];
		}
		return new ScatterBlock(new ScatterHeader(5, RegionKind.KV, regions.length, regions, offsets, lengths), src,
				SendGate.OPEN);
	}

	private byte[] sourceBytes(long address, int length) {
		ByteBuf view = NativeMemory.wrap(address, length);
		try {
			return ByteBufUtil.getBytes(view);
		}
		finally {
			view.release();
		}
	}

	private static byte[] bytes(ByteBuf frame) {
		try {
			return ByteBufUtil.getBytes(frame);
		}
		finally {
			frame.release();
		}
	}

	private void feed(byte[] bytes, int size) {
		KVFrameDecoderTest.feed(channel, fed, bytes, size);
	}
}
