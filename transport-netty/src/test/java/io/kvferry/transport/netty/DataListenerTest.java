package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvferry.KVFerryException;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.RegionKind;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import io.kvferry.test.Samples;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A data block's listener hears what became of the block: written once its last frame went out (a sender keeps only a
 * window of a room queued by it), failed when the block was dropped behind a closed gate or by a closed connection.
 */
class DataListenerTest {

	private static Mono<Void> sendData(io.kvferry.spi.KVConnection c, DataBlock block) {
		return Mono.create(sink -> c.send(block, SendListener.of(sink)));
	}

	@Test
	void aBlockIsReportedWrittenOnceItsFramesWentOut() throws Exception {
		// Frames of 64 KiB: the block goes out in several, the answer comes after the last.
		try (Loopback lo = Loopback.open(NettyKVTransport.create().maxFrameLength(64 << 10))) {
			MemoryRegion src = Samples.randomRegion(1 << 20, 3);
			DataHeader header = new DataHeader(1, RegionKind.KV, 0, 0, 1 << 20, 1 << 20, 1);
			StepVerifier.create(sendData(lo.accepted, new DataBlock(header, src.address(), 1 << 20)))
					.expectComplete()
					.verify(TIMEOUT);
			lo.accepted.send(new KVMessage.AbortAck(1));
			lo.connectedHandler.nextMessage(TIMEOUT);
			assertThat(lo.connectedHandler.events).last().isEqualTo(new KVMessage.AbortAck(1));
		}
	}

	@Test
	void aBlockBehindAClosedGateIsReportedDropped() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create())) {
			MemoryRegion src = Samples.randomRegion(1024, 5);
			SendGate closed = () -> false;
			DataHeader header = new DataHeader(7, RegionKind.KV, 0, 0, 1024, 1024, 1);
			StepVerifier.create(sendData(lo.accepted, new DataBlock(header, src.address(), 1024, closed)))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
							.hasMessage("a block of room 7 was dropped: its room stopped"))
					.verify(TIMEOUT);
			assertThat(lo.accepted.blocksDropped()).isEqualTo(1);
		}
	}

	@Test
	void aBlockOfAClosedConnectionIsReportedNotWritten() throws Exception {
		try (Loopback lo = Loopback.open(NettyKVTransport.create())) {
			MemoryRegion src = Samples.randomRegion(1024, 9);
			lo.accepted.close("prefill shutting down");
			DataHeader header = new DataHeader(9, RegionKind.KV, 0, 0, 1024, 1024, 1);
			StepVerifier.create(sendData(lo.accepted, new DataBlock(header, src.address(), 1024)))
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(KVFerryException.class)
							.hasMessageContaining("prefill shutting down"))
					.verify(TIMEOUT);
		}
	}
}
