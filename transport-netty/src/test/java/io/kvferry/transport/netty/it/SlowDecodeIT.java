package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.PrefillSpec;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * Decode reads slowly (a proxy between the ranks reads from prefill at a fixed pace) while prefill sends one large room
 * at once: what prefill holds in memory stays bounded by the transport's write-buffer watermark (the rest waits as
 * descriptors of registered memory), and the room still lands byte-exact. Prefill TP 1 to decode TP 2 makes prefill
 * gather each decode rank's heads into pooled direct buffers, the memory that could pile up.
 */
class SlowDecodeIT {

	private static final int KIB = 1024;
	private static final int MIB = 1024 * KIB;
	/** 4 Llama-3-8B layers: 32 KiB per page per layer buffer on prefill, 16 KiB on each decode rank. */
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(4);
	private static final int PAGES = 96;
	private static final long ROOM_BYTES = SHAPE.itemLen(1) * 2L * SHAPE.layers() * PAGES;
	private static final int LOW = 256 * KIB;
	private static final int HIGH = 512 * KIB;
	private static final int MAX_FRAME = 256 * KIB;
	/** What Netty may hold for one connection: the high watermark, one more frame and its headers. */
	private static final long OUTBOUND_BOUND = HIGH + MAX_FRAME + 64 * KIB;
	/** Growth of the pooled allocator's direct memory: far below the room, whatever chunk granularity the pool has. */
	private static final long POOLED_BOUND = 16L * MIB;

	@Test
	void slowDecodeKeepsPrefillMemoryBoundedAndTheLargeRoomStillLands() {
		NettyKVTransport netty = NettyKVTransport.create().writeBufferWaterMark(LOW, HIGH).maxFrameLength(MAX_FRAME)
				.socketBufferSize(128 * KIB);
		try (FaultRig rig = FaultRig.start(SHAPE, 1, 2, PAGES, 4, netty,
				spec -> spec instanceof PrefillSpec p ? p.reregisterInterval(Duration.ZERO) : spec)) {
			PrefillKVManager prefill = rig.cluster.prefillManagers().get(0).get(0);
			// 16 KiB per 1 ms tick per connection at most: far slower than prefill can write on loopback.
			try (TcpProxy proxy = TcpProxy.throttled(prefill.endpoint(), 16 * KIB, Duration.ofMillis(1))) {
				HostPort proxied = proxy.address();
				StepVerifier.create(rig.client.register(rig.bootstrap(), PrefillRegistration.prefill(prefill.layout(),
						proxied.host(), proxied.port(), SHAPE.pageSize())))
						.expectComplete()
						.verify(T);
				int[] pages = range(0, PAGES);
				LiveRoom room = LiveRoom.open(rig.bootstrap(), 1, List.of(prefill), rig.cluster.prefillMemory().get(0),
						rig.cluster.decodeManagers(), rig.cluster.decodeMemory(), pages, pages, 0, 0);
				StepVerifier.create(room.senders.get(0).states())
						.thenConsumeWhile(s -> s == KVPoll.BOOTSTRAPPING)
						.expectNext(KVPoll.WAITING_FOR_INPUT)
						.thenCancel()
						.verify(T);
				List<NettyKVConnection> connections = rig.transport.accepted();
				assertThat(connections).as("each stripe of each decode rank, through the proxy")
						.hasSize(2 * DecodeSpec.DEFAULT_STRIPES);

				long pooledBefore = PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory();
				AtomicLong maxPooled = new AtomicLong(pooledBefore);
				AtomicLong maxOutbound = new AtomicLong();
				AtomicLong maxQueued = new AtomicLong();
				Disposable sampler = Flux.interval(Duration.ofMillis(5)).subscribe(x -> {
					maxPooled.accumulateAndGet(PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory(), Math::max);
					for (NettyKVConnection c : connections) {
						maxOutbound.accumulateAndGet(c.pendingOutboundBytes(), Math::max);
						maxQueued.accumulateAndGet(c.queuedBytes(), Math::max);
					}
				});
				long start = System.nanoTime();
				try {
					room.sendAll();
					StepVerifier.create(room.completion()).expectComplete().verify(T);
				}
				finally {
					sampler.dispose();
				}
				Duration took = Duration.ofNanos(System.nanoTime() - start);
				assertThat(room.verify()).isNull();
				System.out.printf("slow decode: %d MiB room in %d ms through the throttled proxy; prefill peaks: "
						+ "Netty outbound %d KiB per connection, queued descriptors %d KiB, pooled direct +%d KiB%n",
						ROOM_BYTES / MIB, took.toMillis(), maxOutbound.get() / KIB, maxQueued.get() / KIB,
						(maxPooled.get() - pooledBefore) / KIB);
				assertThat(proxy.relayedToClient()).as("every byte went through the slow link")
						.isGreaterThanOrEqualTo(ROOM_BYTES);
				assertThat(maxQueued.get()).as("the room waited as descriptors, not as buffers")
						.isGreaterThan(ROOM_BYTES / 8);
				assertThat(maxOutbound.get()).as("bytes Netty held for one connection")
						.isLessThanOrEqualTo(OUTBOUND_BOUND);
				assertThat(maxPooled.get() - pooledBefore).as("pooled direct memory growth")
						.isLessThanOrEqualTo(POOLED_BOUND);
				for (NettyKVConnection c : connections) {
					assertThat(c.queuedBytes()).isZero();
				}
			}
		}
	}
}
