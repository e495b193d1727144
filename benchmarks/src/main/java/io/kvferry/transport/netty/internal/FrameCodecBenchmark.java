package io.kvferry.transport.netty.internal;

import java.util.concurrent.TimeUnit;

import io.kvferry.KVPoll;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The wire format's encode and decode calls as the connection makes them: a data frame's header (one per block), a
 * room's Success status (one per room and rank) and its transfer request for 128 pages (one per room and rank).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class FrameCodecBenchmark {

	private static final int MAX_FRAME = 1 << 20;
	private static final ByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;

	private final DataHeader header = new DataHeader(123_456, RegionKind.KV, 17, 40L << 20, 4 << 20, 0, 1);
	private final KVMessage status = new KVMessage.Status(123_456, KVPoll.SUCCESS, 3, "", 256L << 20, 0x1234_5678L);
	private final KVMessage request = request();
	private ByteBuf headerBytes;
	private ByteBuf statusBody;
	private ByteBuf requestBody;

	private static KVMessage request() {
		int[] pages = new int[128];
		for (int i = 0; i < pages.length; i++) {
			pages[i] = 7 * i + 11;
		}
		return new KVMessage.TransferRequest(123_456, pages, 5, new int[0], 1, false);
	}

	@Setup
	public void setUp() {
		ByteBuf h = KVFrameCodec.encodeDataHeader(ALLOC, header);
		headerBytes = h.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH);
		statusBody = body(status);
		requestBody = body(request);
	}

	/** @return the frame's body alone: what the decoder hands to {@link KVFrameCodec#decode} */
	private static ByteBuf body(KVMessage message) {
		ByteBuf frame = KVFrameCodec.encode(ALLOC, message, MAX_FRAME);
		return frame.skipBytes(KVFrameCodec.FRAME_PREFIX_LENGTH - 1);
	}

	@TearDown
	public void tearDown() {
		headerBytes.release();
		statusBody.release();
		requestBody.release();
	}

	@Benchmark
	public int encodeDataHeader() {
		ByteBuf b = KVFrameCodec.encodeDataHeader(ALLOC, header);
		int n = b.readableBytes();
		b.release();
		return n;
	}

	@Benchmark
	public DataHeader decodeDataHeader() {
		return KVFrameCodec.decodeDataHeader(headerBytes.duplicate());
	}

	@Benchmark
	public int encodeStatus() {
		ByteBuf b = KVFrameCodec.encode(ALLOC, status, MAX_FRAME);
		int n = b.readableBytes();
		b.release();
		return n;
	}

	@Benchmark
	public KVMessage decodeStatus() {
		ByteBuf body = statusBody.duplicate();
		return KVFrameCodec.decode(body.readUnsignedByte(), body);
	}

	@Benchmark
	public int encodeTransferRequest() {
		ByteBuf b = KVFrameCodec.encode(ALLOC, request, MAX_FRAME);
		int n = b.readableBytes();
		b.release();
		return n;
	}

	@Benchmark
	public KVMessage decodeTransferRequest() {
		ByteBuf body = requestBody.duplicate();
		return KVFrameCodec.decode(body.readUnsignedByte(), body);
	}
}
