package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A decode rank re-registers its regions over real sockets, with the real bootstrap server: rooms before land in the
 * old regions, rooms after in the new ones (a larger pool, whose pages past the old count prefill must accept), the
 * prefill rank learns the new layout on the connection it has, and not one byte lands in the old regions after the
 * swap.
 */
class ReregisterIT {

	private static final ModelShape SHAPE = ModelShape.llama3_8b().withLayers(2);
	private static final int PAGES = 32;
	private static final int ROWS = 4;

	private static FaultRig rig() {
		return FaultRig.start(SHAPE, 1, 1, PAGES, ROWS, NettyKVTransport.create(), spec -> spec
				.bootstrapTimeout(Duration.ofSeconds(60)).waitingTimeout(Duration.ofSeconds(60)));
	}

	/** New decode memory of the rig's shape with {@code pages} pages per buffer. */
	private static RankMemory pool(FaultRig rig, int pages) {
		return RankMemory.decode(SHAPE, rig.cluster.decodeMemory().get(0).layout(), pages, ROWS, ROWS);
	}

	private static LiveRoom room(FaultRig rig, long id, DecodeKVManager decode, RankMemory into, int[] dst) {
		PrefillKVManager prefill = rig.cluster.prefillManagers().get(0).get(0);
		return LiveRoom.open(rig.bootstrap(), id, List.of(prefill), rig.cluster.prefillMemory().get(0), List.of(decode),
				List.of(into), range(0, dst.length), dst, 0, 1);
	}

	private static void moves(LiveRoom room) {
		room.sendAll();
		StepVerifier.create(room.completion()).expectComplete().verify(T);
		assertThat(room.verify()).isNull();
	}

	@Test
	void roomsBeforeAndAfterLandInTheirOwnRegionsAndNoByteLandsInTheOldOnesAfterTheSwap() {
		try (FaultRig rig = rig()) {
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			RankMemory old = rig.cluster.decodeMemory().get(0);
			moves(room(rig, 1, decode, old, range(0, 8)));
			int connections = rig.transport.accepted().size();

			RankMemory grown = pool(rig, PAGES * 2);
			long start = System.nanoTime();
			StepVerifier.create(decode.reregister(grown.kvArgs(), T)).expectNext(1).expectComplete().verify(T);
			long micros = (System.nanoTime() - start) / 1000;
			System.out.printf("kvferry re-registration over sockets, no room in flight: %d µs%n", micros);
			assertThat(decode.kvArgs()).isSameAs(grown.kvArgs());

			// The released regions get a pattern of their own: the engine could reuse them for anything now.
			old.fill(99, range(0, PAGES), 0, new int[0]);
			long before = old.checksumOutside(new int[0], -1, new int[0]);
			// Pages both pools have, then pages past the old pool's end, which prefill accepts only if it plans with the
			// new page counts.
			LiveRoom both = room(rig, 2, decode, grown, range(8, 16));
			both.sendAll();
			StepVerifier.create(both.completion()).expectComplete().verify(T);
			assertThat(old.checksumOutside(new int[0], -1, new int[0])).as("a byte landed in the released regions")
					.isEqualTo(before);
			assertThat(both.verify()).isNull();
			moves(room(rig, 4, decode, grown, range(PAGES + 8, PAGES + 16)));
			assertThat(old.checksumOutside(new int[0], -1, new int[0])).isEqualTo(before);
			assertThat(old.verify(99, range(0, PAGES), 0, new int[0])).isNull();
			assertThat(rig.transport.accepted()).as("the prefill rank heard the new layout without a reconnect")
					.hasSize(connections);

			// A second re-registration moves on to generation 2, back into a pool of the first size.
			RankMemory shrunk = pool(rig, PAGES);
			StepVerifier.create(decode.reregister(shrunk.kvArgs(), T)).expectNext(2).expectComplete().verify(T);
			moves(room(rig, 3, decode, shrunk, range(0, 8)));
			assertThat(grown.verify(4, range(PAGES + 8, PAGES + 16), 1, new int[0])).isNull();
		}
	}

	@Test
	void reregistrationTimeOverSocketsWithOneConnectedPrefillRank() {
		try (FaultRig rig = rig()) {
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			// A room first, so that a session is open and every re-registration tells the prefill rank.
			moves(room(rig, 1, decode, rig.cluster.decodeMemory().get(0), range(0, 8)));
			List<RankMemory> pools = List.of(pool(rig, PAGES), pool(rig, PAGES * 2));
			int runs = 50;
			long[] micros = new long[runs];
			for (int i = 0; i < runs; i++) {
				long start = System.nanoTime();
				StepVerifier.create(decode.reregister(pools.get(i % 2).kvArgs(), T)).expectNext(i + 1)
						.expectComplete().verify(T);
				micros[i] = (System.nanoTime() - start) / 1000;
			}
			long[] sorted = micros.clone();
			Arrays.sort(sorted);
			System.out.printf("kvferry re-registration over sockets (%d runs, no room in flight, 1 prefill rank told):"
					+ " median %d µs, p90 %d µs, max %d µs%n", runs, sorted[runs / 2], sorted[runs * 9 / 10],
					sorted[runs - 1]);
			// The rank plans with the last layout: a room into the last pool's pages moves whole.
			moves(room(rig, 2, decode, pools.get((runs - 1) % 2), range(PAGES + 8, PAGES + 16)));
		}
	}

	@Test
	void aRoomInFlightFinishesBeforeTheSwapAndARoomOpenedMeanwhileIsRefusedTyped() {
		try (FaultRig rig = rig()) {
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			RankMemory old = rig.cluster.decodeMemory().get(0);
			LiveRoom inFlight = room(rig, 1, decode, old, range(0, 8));
			StepVerifier.create(inFlight.senders.get(0).states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).take(1))
					.expectNext(KVPoll.WAITING_FOR_INPUT).expectComplete().verify(T);

			RankMemory next = pool(rig, PAGES);
			StepVerifier.create(decode.reregister(next.kvArgs(), T))
					.expectSubscription()
					.then(() -> {
						assertThat(decode.kvArgs()).as("swapped while room 1 could still land").isSameAs(
								old.kvArgs());
						KVReceiver refused = decode.receiver(rig.bootstrap(), 2);
						assertThat(refused.poll()).isEqualTo(KVPoll.FAILED);
						failsWith(refused.completion(), "KV manager " + decode
								+ " is re-registering its regions and admits no new rooms");
						// The room in flight lands whole in the old regions, then the swap goes on.
						inFlight.sendAll();
					})
					.expectNext(1)
					.expectComplete()
					.verify(T);
			StepVerifier.create(inFlight.completion()).expectComplete().verify(T);
			assertThat(inFlight.verify()).isNull();
			moves(room(rig, 3, decode, next, range(8, 16)));
		}
	}

	@Test
	void aRoomStillInFlightAtTheDeadlineFailsTypedAndNothingOfItLandsInTheNewRegions() {
		try (FaultRig rig = rig()) {
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			RankMemory old = rig.cluster.decodeMemory().get(0);
			LiveRoom stuck = room(rig, 1, decode, old, range(0, 8));
			StepVerifier.create(stuck.senders.get(0).states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).take(1))
					.expectNext(KVPoll.WAITING_FOR_INPUT).expectComplete().verify(T);

			RankMemory next = pool(rig, PAGES);
			// Everything of the new pool but what room 2 is granted later.
			long untouched = next.checksumOutside(range(8, 16), 1, new int[0]);
			StepVerifier.create(decode.reregister(next.kvArgs(), Duration.ZERO)).expectNext(1).expectComplete()
					.verify(T);
			failsWith(stuck.receivers.get(0).completion(), "was re-registering its regions and room 1 did not end "
					+ "within the deadline of PT0S; aborted");
			// The prefill rank was told: its sender fails too, and no byte of the room lands in the new pool.
			StepVerifier.create(stuck.senders.get(0).completion()).expectError().verify(T);
			moves(room(rig, 2, decode, next, range(8, 16)));
			assertThat(next.checksumOutside(range(8, 16), 1, new int[0])).isEqualTo(untouched);
			assertThat(decode.stats().failures()).containsEntry(FailureCause.DRAINING, 1L);
		}
	}

	private static void failsWith(Mono<Void> completion, String reason) {
		StepVerifier.create(completion)
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).as(k.reason()).isEqualTo(FailureCause.DRAINING);
					assertThat(k.reason()).contains(reason);
				})
				.verify(T);
	}
}
