package io.kvferry.transport.netty;

import static io.kvferry.transport.netty.Loopback.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import io.kvferry.MemoryRegion;
import io.kvferry.spi.DataBlock;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.RegionKind;
import io.kvferry.test.RegionSink;
import io.kvferry.test.Samples;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelOption;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.channel.uring.IoUring;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * The receive low-water mark raised while payloads land (Epoll and io_uring): payloads of every size around its
 * thresholds (the landing minimum, the mark's 1 MiB cap, half the receive buffer, the landing maximum) arrive whole
 * over sockets with small receive buffers, each followed by a tiny control message that must not wait behind a mark
 * left raised. A stall fails by the bounded wait of the verifier, never by a sleep.
 */
class ReceiveLowWaterTest {

	private static final int KIB = 1024;
	private static final int MIB = 1024 * KIB;
	private static final ChannelOption<Integer> SO_RCVLOWAT = new IntegerUnixChannelOption("SO_RCVLOWAT", 1, 18);

	static Stream<Arguments> modesAndBuffers() {
		return Stream.of(IoMode.EPOLL, IoMode.IO_URING)
				.flatMap(mode -> IntStream.of(4 * KIB, 64 * KIB, 256 * KIB, 0).mapToObj(b -> Arguments.of(mode, b)));
	}

	@ParameterizedTest(name = "{0}, SO_RCVBUF {1}")
	@MethodSource("modesAndBuffers")
	void payloadsAroundEveryThresholdArriveWithoutStallAndLeaveTheMarkAtOne(IoMode mode, int socketBuffer)
			throws Exception {
		if (mode == IoMode.IO_URING) {
			Assumptions.assumeTrue(IoUring.isAvailable(), () -> "io_uring unavailable: " + IoUring.unavailabilityCause());
		}
		else {
			Assumptions.assumeTrue(Epoll.isAvailable(), () -> "epoll unavailable: " + Epoll.unavailabilityCause());
		}
		try (Loopback lo = Loopback.open(NettyKVTransport.create().ioMode(mode, true).socketBufferSize(socketBuffer))) {
			int rcvbuf = lo.connected.channel().config().getOption(ChannelOption.SO_RCVBUF);
			List<Integer> sizes = new ArrayList<>();
			for (int edge : new int[] { 64 * KIB, rcvbuf / 2, rcvbuf, MIB, MIB + 64 * KIB, 4 * MIB }) {
				sizes.add(edge - 1);
				sizes.add(edge);
				sizes.add(edge + 1);
			}
			MemoryRegion src = Samples.randomRegion(4 * MIB + 2, 7);
			MemoryRegion dst = MemoryRegion.allocate(4 * MIB + 2, 1);
			byte[] zeros = new byte[4 * MIB + 2];
			AtomicInteger highestMark = new AtomicInteger();
			for (int size : sizes) {
				dst.wrap(0, zeros.length).setBytes(0, zeros);
				AtomicLong received = new AtomicLong();
				lo.connectedHandler.sinks = h -> markRecording(lo,
						new RegionSink(dst, h, received, new AtomicLong(), () -> { }), highestMark);
				int room = size;
				lo.accepted.send(new DataBlock(new DataHeader(room, RegionKind.KV, 0, 0, size, size, 1),
						src.address(), size));
				lo.accepted.send(new KVMessage.AbortAck(room));
				StepVerifier.create(Mono.fromCallable(() -> lo.connectedHandler.nextMessage(TIMEOUT)))
						.expectNext(new KVMessage.AbortAck(room))
						.expectComplete()
						.verify(TIMEOUT.plusSeconds(1));
				assertThat(received.get()).as("payload of %d bytes", size).isEqualTo(size);
				assertThat(Samples.read(dst, 0, size)).as("payload of %d bytes", size)
						.isEqualTo(Samples.read(src, 0, size));
				int after = lo.connected.channel().eventLoop().submit(
						() -> lo.connected.channel().config().getOption(SO_RCVLOWAT)).get();
				assertThat(after).as("mark after a payload of %d bytes", size).isEqualTo(1);
			}
			// An auto-tuned buffer (0) grows during the test: only the 1 MiB cap holds throughout.
			assertThat(highestMark.get()).as("the mark was raised while payloads landed")
					.isGreaterThan(1).isLessThanOrEqualTo(socketBuffer > 0 ? Math.min(MIB, rcvbuf / 2) : MIB);
		}
	}

	/** A sink that records the socket's mark each time bytes landed in place. */
	private static PayloadSink markRecording(Loopback lo, RegionSink sink, AtomicInteger highest) {
		return new PayloadSink() {
			@Override
			public ByteBuf landingZone(int minBytes, int maxBytes) {
				return sink.landingZone(minBytes, maxBytes);
			}

			@Override
			public void write(ByteBuf segment) {
				sink.write(segment);
			}

			@Override
			public void landed(int n) {
				highest.accumulateAndGet(lo.connected.channel().config().getOption(SO_RCVLOWAT), Math::max);
				sink.landed(n);
			}

			@Override
			public void complete() {
				sink.complete();
			}
		};
	}
}
