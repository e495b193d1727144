package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import io.kvferry.KVFerryException;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendListener;
import io.kvferry.test.Samples;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

/**
 * A data frame whose strided source cannot be gathered (the direct memory for its payload is not there) is not
 * written at all: never its header alone, which would make the peer read the next frame's bytes as this one's
 * payload. The block's sender is told and the connection closes with the reason.
 */
class FrameAllocationFailureTest {

	private static final int CHUNK = 1024;
	private static final int COUNT = 4;

	/** Fails every direct buffer of exactly {@code failing} bytes: the gathered payload, not the header. */
	private static final class FailingAllocator extends AbstractByteBufAllocator {

		private final int failing;

		FailingAllocator(int failing) {
			super(true);
			this.failing = failing;
		}

		@Override
		protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
			return UnpooledByteBufAllocator.DEFAULT.heapBuffer(initialCapacity, maxCapacity);
		}

		@Override
		protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
			if (initialCapacity == failing) {
				throw new OutOfMemoryError("Direct buffer memory");
			}
			return UnpooledByteBufAllocator.DEFAULT.directBuffer(initialCapacity, maxCapacity);
		}

		@Override
		public boolean isDirectBufferPooled() {
			return false;
		}
	}

	@Test
	void aPayloadThatCannotBeGatheredIsNotPrecededByItsHeader() {
		EmbeddedChannel channel = new EmbeddedChannel(new ChannelInboundHandlerAdapter());
		channel.config().setAllocator(new FailingAllocator(CHUNK * COUNT));
		AtomicReference<KVFerryException> closedWith = new AtomicReference<>();
		AtomicReference<Throwable> told = new AtomicReference<>();
		MemoryRegion src = Samples.randomRegion(2 * CHUNK * COUNT, 5);
		try {
			OutboundQueue queue = new OutboundQueue(channel, 1 << 20, Duration.ofSeconds(1),
					(when, cause) -> new KVFerryException(when), closedWith::set);
			queue.start(channel.pipeline().firstContext(), "[test]");
			// Every other chunk of the source: the frame's payload must be gathered into a buffer of its own.
			DataHeader header = new DataHeader(7, RegionKind.KV, 0, 0, CHUNK, 2L * CHUNK, COUNT);
			queue.offer(new DataBlock(header, src.address(), 2L * CHUNK), new SendListener() {
				@Override
				public void written() {
					told.set(new AssertionError("told written"));
				}

				@Override
				public void failed(Throwable cause) {
					told.set(cause);
				}
			});
			channel.runPendingTasks();
			List<Object> written = new ArrayList<>();
			for (Object m; (m = channel.readOutbound()) != null;) {
				written.add(m);
			}
			long bytes = written.stream().mapToLong(m -> ((ByteBuf) m).readableBytes()).sum();
			written.forEach(ReferenceCountUtil::release);
			assertThat(bytes).as("bytes written for a frame whose payload could not be built").isZero();
			assertThat(closedWith.get()).as("the connection closes").isNotNull();
			assertThat(closedWith.get().getMessage()).contains("room 7").contains("4096 bytes");
			assertThat(told.get()).as("the block's sender is told").isInstanceOf(KVFerryException.class);
			assertThat(queue.queuedBytes()).as("nothing left counted as queued").isZero();
		}
		finally {
			channel.finishAndReleaseAll();
		}
	}
}
