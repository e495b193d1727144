package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** A receiver that stops reading holds the sender back at its write-buffer watermark instead of growing memory. */
class BackpressureTest {

	private static final int MIB = 1 << 20;

	@Test
	void slowReceiverMakesTheSenderUnwritableAndBoundsWhatNettyHolds() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create().writeBufferWaterMark(4 * MIB, 8 * MIB))) {
			MemoryRegion src = Samples.randomRegion(MIB, 21);
			MemoryRegion dst = MemoryRegion.allocate(MIB, 1);
			NettyKVTransportTest.Transfer transfer = new NettyKVTransportTest.Transfer(dst, 256L * MIB);
			lo.connectedHandler.sinks = transfer::sink;

			lo.connected.channel().config().setAutoRead(false);
			CountDownLatch unwritable = new CountDownLatch(1);
			lo.accepted.channel().pipeline().addLast(new ChannelInboundHandlerAdapter() {
				@Override
				public void channelWritabilityChanged(ChannelHandlerContext ctx) {
					if (!ctx.channel().isWritable()) {
						unwritable.countDown();
					}
					ctx.fireChannelWritabilityChanged();
				}
			});

			for (int i = 0; i < 256; i++) {
				lo.accepted.sendData(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, MIB, MIB, 1), src.address(),
						MIB));
			}
			CompletableFuture<Void> last = lo.accepted.send(new KVMessage.AbortAck(1)).toFuture();

			assertThat(unwritable.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).as("sender became unwritable")
					.isTrue();
			// Runs after the drain that the last sendData scheduled: what Netty holds is now as large as it gets.
			long inNetty = lo.accepted.channel().eventLoop().submit(lo.accepted::pendingOutboundBytes)
					.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
			// Bounded by the high watermark plus one frame (and the frames' bookkeeping), whatever the kernel took.
			assertThat(inNetty).isLessThanOrEqualTo(9L * MIB + 64 * 1024);
			assertThat(lo.accepted.queuedBytes()).as("still queued as descriptors").isGreaterThan(200L * MIB);
			assertThat(last).isNotDone();

			lo.connected.channel().config().setAutoRead(true);
			transfer.await();
			StepVerifier.create(reactor.core.publisher.Mono.fromFuture(last)).expectComplete().verify(TIMEOUT);
			assertThat(lo.connectedHandler.nextMessage(TIMEOUT)).isEqualTo(new KVMessage.AbortAck(1));
			assertThat(lo.accepted.queuedBytes()).isZero();
			assertThat(Samples.read(dst, 0, MIB)).isEqualTo(Samples.read(src, 0, MIB));
		}
	}

	@Test
	void closingMidStreamFailsPendingSendsAndCallsOnCloseOnce() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create().writeBufferWaterMark(MIB, 2 * MIB))) {
			MemoryRegion src = Samples.randomRegion(MIB, 22);
			lo.connected.channel().config().setAutoRead(false);
			for (int i = 0; i < 64; i++) {
				lo.accepted.sendData(new DataBlock(new DataHeader(1, RegionKind.KV, 0, 0, MIB, MIB, 1), src.address(),
						MIB));
			}
			var pending = lo.accepted.send(new KVMessage.Status(1, io.kvferry.KVPoll.FAILED, 0, "late"));
			// The receiver goes away with unread bytes: the sender sees a reset or a close mid-stream.
			lo.connected.channel().close();
			StepVerifier.create(pending)
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(io.kvferry.KVFerryException.class)
							.hasMessageContaining("closed before the message was written"))
					.verify(TIMEOUT);
			lo.acceptedHandler.awaitClose(TIMEOUT);
			lo.connectedHandler.awaitClose(TIMEOUT);
			assertThat(lo.acceptedHandler.closeReasons).hasSize(1);
			assertThat(lo.connectedHandler.closeReasons).hasSize(1);
			assertThat(lo.accepted.queuedBytes()).isZero();
			assertThat(lo.accepted.isActive()).isFalse();
		}
	}
}
