package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.DecodeKVManager;
import io.kvferry.KVPoll;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A room of one page asked while a room of 256 MiB is on the wire between the same prefill and decode ranks, over the
 * same connections: the small room does not wait for the large one (each room keeps only a window of its pieces in a
 * stripe's queue, so the rooms take turns), it completes first, and every byte of both is verified. Prefill and
 * decode have event loops of their own, as they do in their own processes. Prints the small room's latency alone and
 * under the bulk room.
 */
class SmallRoomBehindBulkIT {

	private static final Duration T = Duration.ofSeconds(60);
	/** 8 layers of Llama-3-8B heads: 512 KiB per page over the 16 layer buffers of one rank. */
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(8);
	private static final int BULK_PAGES = 512;
	private static final int ALONE_ROOMS = 7;

	@Test
	void aOnePageRoomAskedWhileA256MibRoomIsInFlightCompletesFirstAndBothVerify() {
		try (LoopbackCluster pair = LoopbackCluster.startApart(SHAPE, BULK_PAGES + 16, 16)) {
			KVCluster cluster = pair.cluster;
			DecodeKVManager decode = cluster.decodeManagers().get(0);
			PrefillKVManager prefill = cluster.prefillManagers().get(0).get(0);
			// Connected and warm: the small room's figure alone is its steady latency.
			List<Long> alone = new ArrayList<>();
			for (int i = 0; i < 2 * ALONE_ROOMS; i++) {
				RoomResult r = cluster.run(100 + i, SHAPE.pageSize(), 1, new Random(i)).block(T);
				assertThat(r.failure()).as("room %d alone", r.room()).isNull();
				if (i >= ALONE_ROOMS) {
					alone.add(r.latencyNanos());
				}
			}
			alone.sort(null);
			long aloneMedian = alone.get(alone.size() / 2);
			long warmBytes = decode.stats().bytesReceived();

			StagedRoom bulk = cluster.stage(1, BULK_PAGES * SHAPE.pageSize(), 1, new Random(1));
			StagedRoom small = cluster.stage(2, SHAPE.pageSize(), 1, new Random(2));
			AtomicLong bulkDone = new AtomicLong();
			AtomicLong smallDone = new AtomicLong();
			long start = System.nanoTime();
			Mono<Void> bulkMoved = bulk.transfer().doOnTerminate(() -> bulkDone.set(System.nanoTime())).cache();
			bulkMoved.subscribe();
			// The bulk room's first bytes landed: all of it is queued on prefill's side of the connections.
			Flux.interval(Duration.ofMillis(1)).filter(x -> decode.status(1) != KVPoll.BOOTSTRAPPING
					&& decode.status(1) != KVPoll.WAITING_FOR_INPUT).next().block(T);
			// What had landed when prefill had the small room's request and queued its pieces: from then on, only
			// what the bulk room already had queued may go ahead of them.
			AtomicLong landedAtQueued = new AtomicLong(-1);
			Disposable stamp = prefill.events().filter(e -> e.room() == 2 && e.current() == KVPoll.TRANSFERRING)
					.next().subscribe(e -> landedAtQueued.set(decode.stats().bytesReceived()));
			long smallStart = System.nanoTime();
			AtomicLong landedAtSmallEnd = new AtomicLong();
			small.transfer().doOnTerminate(() -> {
				landedAtSmallEnd.set(decode.stats().bytesReceived());
				smallDone.set(System.nanoTime());
			}).block(T);
			bulkMoved.block(T);
			stamp.dispose();

			RoomResult smallResult = small.verify();
			RoomResult bulkResult = bulk.verify();
			assertThat(smallResult.failure()).as("the small room").isNull();
			assertThat(bulkResult.failure()).as("the bulk room").isNull();
			assertThat(landedAtQueued.get()).as("prefill started the small room").isNotNegative();
			long bulkLeft = bulkResult.bytes() - (landedAtQueued.get() - warmBytes);
			long wentFirst = landedAtSmallEnd.get() - landedAtQueued.get() - smallResult.bytes();
			System.out.printf(Locale.ROOT, "1-page room: %.2f ms alone (median of %d), %.2f ms while a %d MiB room was "
					+ "in flight, which took %.1f ms in all (the small room completed %.1f ms after the bulk room "
					+ "started, %s it); once prefill queued it, %d MiB of the bulk room's %d MiB still to land went "
					+ "first%n", aloneMedian / 1e6, ALONE_ROOMS, (smallDone.get() - smallStart) / 1e6,
					bulkResult.bytes() >> 20, (bulkDone.get() - start) / 1e6, (smallDone.get() - start) / 1e6,
					smallDone.get() < bulkDone.get() ? "before" : "after", wentFirst >> 20, bulkLeft >> 20);
			// Queued behind the whole bulk room, the small room would end with it. Judged in bytes that went first,
			// not in time, so that a machine slowed by other work does not change the verdict.
			assertThat(bulkLeft).as("bulk bytes still to land when prefill had the small room's request: its loop reads "
					+ "between the bulk room's writes").isGreaterThan(bulkResult.bytes() / 2);
			assertThat(smallDone.get()).as("the small room completed before the bulk room it was asked behind")
					.isLessThan(bulkDone.get());
			assertThat(wentFirst).as("bulk bytes that landed after prefill queued the small room and before it ended, "
					+ "against what the bulk room still had to land then (%d bytes)", bulkLeft).isLessThan(bulkLeft / 2);
		}
	}
}
