package io.kvferry.transport.netty.internal;

import java.util.concurrent.TimeUnit;

import io.kvferry.KVPoll;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The receiving pipeline's decoder on an {@link EmbeddedChannel}: a read holding one data frame (its payload handed to
 * a sink that only counts, so that the decoder is measured, not the copy) and a Success status. The payload size
 * changes how often the decoder's per-frame work runs per byte.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class FrameDecoderBenchmark {

	private static final int MAX_FRAME = 8 << 20;
	private static final ByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;

	@Param({ "4096", "32768" })
	public int payload;

	private EmbeddedChannel channel;
	private ByteBuf read;
	private long bytes;
	private int messages;

	@Setup
	public void setUp() {
		channel = new EmbeddedChannel(new KVFrameDecoder(KVMessage.PROTOCOL_VERSION, MAX_FRAME, new Counter()));
		channel.writeInbound(KVFrameCodec.encodePreface(ALLOC, KVMessage.PROTOCOL_VERSION));
		read = ALLOC.directBuffer();
		ByteBuf header = KVFrameCodec.encodeDataHeader(ALLOC,
				new DataHeader(42, RegionKind.KV, 3, 1L << 20, payload, 0, 1));
		read.writeBytes(header);
		header.release();
		read.writeZero(payload);
		ByteBuf status = KVFrameCodec.encode(ALLOC, new KVMessage.Status(42, KVPoll.SUCCESS, 0, "", payload, -1),
				MAX_FRAME);
		read.writeBytes(status);
		status.release();
	}

	@TearDown
	public void tearDown() {
		read.release();
		channel.finishAndReleaseAll();
	}

	@Benchmark
	public long dataFrameAndStatus() {
		// The decoder owns what it reads: it releases this duplicate, the bytes stay for the next invocation.
		channel.writeInbound(read.retainedDuplicate());
		return bytes + messages;
	}

	private final class Counter implements KVFrameDecoder.Listener, PayloadSink {

		@Override
		public void onPreface(int version) {
		}

		@Override
		public void onMessage(KVMessage message) {
			messages++;
		}

		@Override
		public void onHeartbeat() {
		}

		@Override
		public void onAuth(KVFrameCodec.Auth auth) {
		}

		@Override
		public void onAuthProof(byte[] proof) {
		}

		@Override
		public PayloadSink onData(DataHeader header) {
			return this;
		}

		@Override
		public void onFailure(Throwable cause) {
			throw new IllegalStateException("the decoder failed on well-formed frames", cause);
		}

		@Override
		public void write(ByteBuf segment) {
			bytes += segment.readableBytes();
		}

		@Override
		public void complete() {
		}
	}
}
