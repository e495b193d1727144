package io.kvferry.transport.netty.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.stream.LongStream;

import io.kvferry.DecodeKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVStatusEvent;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomPriority;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A one-page room asked while eight large rooms are on the wire between the same ranks: each large room keeps a
 * window of its pieces queued on every stripe, so a NORMAL room waits behind all those windows, while a HIGH room goes
 * ahead of them and waits only for what is already written or being written. Judged in bytes that landed ahead of the
 * small room, not in time, so that a slow machine does not change the verdict; every byte of every room is verified.
 */
class HighPriorityRoomIT {

	private static final Duration T = Duration.ofSeconds(60);
	/** 8 layers of Llama-3-8B heads: 512 KiB per page over the 16 layer buffers of one rank. */
	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(8);
	private static final int BULK_ROOMS = 16;
	private static final int BULK_PAGES = 64;
	private static final long MIB = 1 << 20;
	private static final long PAGE_BYTES = 512 << 10;

	@Test
	void aHighPriorityRoomGoesAheadOfTheWindowsEveryBulkRoomKeepsQueued() {
		// Events on the thread that made the change, so that each stamp reads the count at that moment, not when a
		// busy callback worker gets to it.
		try (LoopbackCluster pair = LoopbackCluster.startApart(SHAPE, BULK_ROOMS * BULK_PAGES + 16, 32,
				b -> b.customize(spec -> spec.callbackScheduler(Schedulers.immediate())))) {
			KVCluster cluster = pair.cluster;
			for (int i = 0; i < 4; i++) {
				assertThat(cluster.run(900 + i, SHAPE.pageSize(), 1, new Random(i)).block(T).failure()).isNull();
			}
			long normal = aheadOfASmallRoom(cluster, 100, RoomPriority.NORMAL);
			long high = aheadOfASmallRoom(cluster, 200, RoomPriority.HIGH);
			System.out.printf(Locale.ROOT, "1-page room behind %d rooms of %d MiB: %d MiB of theirs landed ahead of it as "
					+ "NORMAL, %d MiB as HIGH%n", BULK_ROOMS, BULK_PAGES * PAGE_BYTES / MIB, normal / MIB, high / MIB);
			// Ahead of a NORMAL room: every bulk room's window on each stripe (16 × 8 MiB per stripe here), besides
			// what is written already. Ahead of a HIGH room only the latter: on each of the two stripes the piece
			// being written (4 MiB), what Netty holds up to its high watermark (8 MiB) and the kernel's socket
			// buffers on both ends, and what the other stripe lands while decode waits for the room's last stripe.
			// Here 222-249 MiB against 34-79 MiB, with two cores kept busy meanwhile or not; one queue for both let
			// 251 MiB through against 244. Sixteen rooms rather than eight keep the gap wide when the machine is
			// busy: with eight, a loaded run let 90 MiB through as HIGH against 147 as NORMAL.
			assertThat(normal).as("bulk bytes that landed ahead of the NORMAL room").isGreaterThan(128 * MIB);
			assertThat(high).as("bulk bytes that landed ahead of the HIGH room, against %d MiB ahead of the NORMAL one",
					normal / MIB).isLessThan(normal * 3 / 5);
		}
	}

	/** @return bulk bytes that landed between prefill queuing the small room's data and decode judging it a success */
	private static long aheadOfASmallRoom(KVCluster cluster, long firstRoom, RoomPriority priority) {
		DecodeKVManager decode = cluster.decodeManagers().get(0);
		PrefillKVManager prefill = cluster.prefillManagers().get(0).get(0);
		List<StagedRoom> bulk = new ArrayList<>();
		for (int i = 0; i < BULK_ROOMS; i++) {
			bulk.add(cluster.stage(firstRoom + i, BULK_PAGES * SHAPE.pageSize(), 1, new Random(firstRoom + i)));
		}
		long small = firstRoom + BULK_ROOMS;
		StagedRoom one = cluster.stage(small, SHAPE.pageSize(), 1, new Random(small)).priority(priority);
		Mono<Void> moved = Flux.fromIterable(bulk).flatMap(StagedRoom::transfer).then().cache();
		moved.subscribe();
		// Every bulk room's first bytes landed: each has its window queued on prefill's side of the connections.
		Flux.interval(Duration.ofMillis(1)).filter(x -> LongStream.range(firstRoom, small)
				.allMatch(r -> transferring(decode, r))).next().block(T);
		// Each stamp is read where its event is published; the room's completion may reach this thread before decode's
		// event is published, so the stamps are awaited rather than read when the transfer ends.
		Mono<Long> landedAtQueued = stampAt(prefill.events(), small, KVPoll.TRANSFERRING, decode);
		Mono<Long> landedAtEnd = stampAt(decode.events(), small, KVPoll.SUCCESS, decode);
		one.transfer().block(T);
		moved.block(T);
		RoomResult result = one.verify();
		assertThat(result.failure()).as("the %s room", priority).isNull();
		for (StagedRoom b : bulk) {
			assertThat(b.verify().failure()).as("a bulk room").isNull();
		}
		long queued = landedAtQueued.block(T);
		long end = landedAtEnd.block(T);
		return end - queued - result.bytes();
	}

	/** @return decode's bytes received when the room's event of that state is published; subscribed at once */
	private static Mono<Long> stampAt(Flux<KVStatusEvent> events, long room, KVPoll state, DecodeKVManager decode) {
		Mono<Long> stamp = events.filter(e -> e.room() == room && e.current() == state).next()
				.map(e -> decode.stats().bytesReceived()).cache();
		stamp.subscribe();
		return stamp;
	}

	// Past waiting: its bytes are landing, or it ended (an ended room is forgotten, its status null).
	private static boolean transferring(DecodeKVManager decode, long room) {
		KVPoll s = decode.status(room);
		return s != KVPoll.BOOTSTRAPPING && s != KVPoll.WAITING_FOR_INPUT;
	}
}
