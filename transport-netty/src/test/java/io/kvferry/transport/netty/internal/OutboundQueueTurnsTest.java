package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.KVFerryException;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendListener;
import io.kvferry.test.Samples;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoop;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;

/**
 * A large block does not hold its event loop until it is all written: after a few MiB the queue lets the loop get to
 * its other work (on a socket loop: polling its sockets, where a small room's request or an abort may wait) and goes
 * on after it.
 */
class OutboundQueueTurnsTest {

	private static final int BLOCK = 16 << 20;
	private static final int FRAME = 1 << 20;
	private static final long T = 10;

	@Test
	void aLargeBlockIsWrittenInTurnsWithTheLoopsOtherWork() throws Exception {
		DefaultEventLoopGroup group = new DefaultEventLoopGroup(1);
		AtomicLong received = new AtomicLong();
		try {
			LocalAddress address = new LocalAddress("outbound-queue-turns");
			Channel server = new ServerBootstrap().group(group).channel(LocalServerChannel.class)
					.childHandler(new ChannelInboundHandlerAdapter() {
						@Override
						public void channelRead(ChannelHandlerContext ctx, Object msg) {
							received.addAndGet(((ByteBuf) msg).readableBytes());
							ReferenceCountUtil.release(msg);
						}
					}).bind(address).sync().channel();
			Channel client = new Bootstrap().group(group).channel(LocalChannel.class)
					.handler(new ChannelInboundHandlerAdapter()).connect(address).sync().channel();
			// A write buffer that never fills: only the turns may stop the drain.
			client.config().setWriteBufferWaterMark(new WriteBufferWaterMark(1 << 30, Integer.MAX_VALUE));
			MemoryRegion src = Samples.randomRegion(BLOCK, 11);
			EventLoop loop = client.eventLoop();
			CompletableFuture<Long> firstLook = new CompletableFuture<>();
			OutboundQueue queue = loop.submit(() -> {
				OutboundQueue q = new OutboundQueue(client, FRAME, Duration.ofSeconds(1),
						(when, cause) -> new KVFerryException(when), e -> { });
				q.start(client.pipeline().firstContext(), "[test]");
				q.offer(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, BLOCK, BLOCK, 1), src.address(), BLOCK),
						SendListener.NONE);
				// Queued right behind the drain, from the loop itself, so that the test thread's own pace cannot let
				// the turns run first: without turns this look would find the whole block written.
				loop.execute(() -> firstLook.complete(q.queuedBytes()));
				return q;
			}).get(T, TimeUnit.SECONDS);
			long left = firstLook.get(T, TimeUnit.SECONDS);
			assertThat(left).as("bytes of the block still queued when the loop got to its next task")
					.isGreaterThanOrEqualTo(BLOCK - 2 * OutboundQueue.BYTES_BETWEEN_POLLS).isLessThan(BLOCK);
			for (int turn = 0; turn < 1_000 && left > 0; turn++) {
				left = loop.submit(queue::queuedBytes).get(T, TimeUnit.SECONDS);
			}
			assertThat(left).as("the whole block went, in turns").isZero();
			client.close().sync();
			server.close().sync();
			assertThat(received.get()).as("payload and frame headers received").isGreaterThan(BLOCK);
		}
		finally {
			group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
		}
	}
}
