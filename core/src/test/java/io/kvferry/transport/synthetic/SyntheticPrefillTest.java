package io.kvferry.transport.synthetic;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.DecodeKVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVStatusEvent;
import io.kvferry.ParallelLayout;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A decode manager against a synthetic prefill instance, in-process: its rooms go through decode's own states,
 * sessions, stripes and ledger to Success, every byte the pattern the decode rank verifies; and the instance's byte
 * rate holds on its scheduler's clock (virtual time here), block by block.
 */
class SyntheticPrefillTest {

	private static final Duration T = Duration.ofSeconds(10);
	// MHA, 2 layers of 2 heads of 128 bytes, 16-token pages: K and V buffers of 4 KiB pages, a 64-byte aux row.
	private static final ModelShape MHA = new ModelShape(2, 2, 64, 2, 16, false, 0, 64, 0);
	// MLA, 1 layer, 64-token pages of 1 KiB per token: 64 KiB pages, four to a 256 KiB block.
	private static final ModelShape WIDE = new ModelShape(1, 1, 512, 2, 64, true, 0, 0, 0);

	private final List<DecodeKVManager> managers = new ArrayList<>();
	private final List<SyntheticPrefill> sources = new ArrayList<>();

	@AfterEach
	void close() {
		managers.forEach(m -> m.disposeNow(T));
		sources.forEach(SyntheticPrefill::dispose);
	}

	@ParameterizedTest(name = "stripes {0}")
	@ValueSource(ints = { 1, 3 })
	void roomsSucceedThroughTheNormalStatesWithEveryByteThePattern(int stripes) {
		RankMemory mem = RankMemory.decode(MHA, ParallelLayout.SINGLE, 64, 4, 4);
		SyntheticPrefill source = SyntheticPrefill.builder().pageSize(MHA.pageSize())
				.pattern(RankMemory.synthetic(List.of(mem))).build();
		sources.add(source);
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(mem.kvArgs()).transport(source.transport())
				.bootstrapClient(source.bootstrapClient()).stripes(stripes).startNow(T);
		managers.add(decode);

		long expected = 0;
		for (int room = 1; room <= 4; room++) {
			// Scattered and consecutive pages, a prefix decode already held in room 3.
			int[] pages = room == 2 ? new int[] { 40, 41, 42, 43, 44, 45, 46, 47, 48, 49 }
					: new int[] { 3 * room, 60 - room, 17 + room, 18 + room, 30 };
			int prefix = room == 3 ? 2 : 0;
			int row = room - 1;
			long id = room;
			// Every change of the room, from its first: the manager's events, watched before the room exists.
			Mono<List<KVPoll>> path = decode.events().filter(e -> e.room() == id)
					.takeUntil(e -> e.current().isTerminal())
					.collectList().map(SyntheticPrefillTest::path).cache();
			path.subscribe();
			KVReceiver r = decode.receiver(source.bootstrapAddress(), id);
			// The room's verdict waits for the check: Success means every byte is the pattern.
			r.verify(() -> mem.verify(id, pages, prefix, row, new int[0]));
			r.sendMetadata(prefix * MHA.pageSize(), pages, row, new int[][] { {} });

			StepVerifier.create(r.completion()).expectComplete().verify(T);
			StepVerifier.create(path).expectNext(List.of(KVPoll.BOOTSTRAPPING, KVPoll.WAITING_FOR_INPUT,
					KVPoll.TRANSFERRING, KVPoll.SUCCESS)).expectComplete().verify(T);
			assertThat(mem.verify(id, pages, prefix, row, new int[0])).isNull();
			expected += mem.kvBytes(pages.length) + MHA.auxItemLen();
		}
		assertThat(source.bytesSent()).isEqualTo(expected);
		assertThat(decode.stats().bytesReceived()).isEqualTo(expected);
		assertThat(decode.stats().roomsSucceeded()).isEqualTo(4);
		assertThat(source.roomsServed()).isEqualTo(4);
	}

	/** @return the states a room went through, from the events of its changes */
	private static List<KVPoll> path(List<KVStatusEvent> events) {
		List<KVPoll> states = new ArrayList<>();
		for (KVStatusEvent e : events) {
			if (states.isEmpty() && e.previous() != null) {
				states.add(e.previous());
			}
			states.add(e.current());
		}
		return states;
	}

	@Test
	void theByteRateHoldsBlockByBlockOnTheSourcesClock() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			RankMemory mem = RankMemory.decode(WIDE, ParallelLayout.SINGLE, 64, 1, 1);
			// 25 MiB/s: one 256 KiB block every 10 ms, the first at once (the burst is one block).
			SyntheticPrefill source = SyntheticPrefill.builder().pageSize(WIDE.pageSize()).rate(25L << 20)
					.pattern(RankMemory.synthetic(List.of(mem))).scheduler(vts).build();
			sources.add(source);
			DecodeKVManager decode = KVManagerSpec.decode().kvArgs(mem.kvArgs()).transport(source.transport())
					.bootstrapClient(source.bootstrapClient()).stripes(1).timer(vts).startNow(T);
			managers.add(decode);
			int[] pages = new int[32];
			for (int i = 0; i < pages.length; i++) {
				pages[i] = 16 + i;
			}
			long block = 256 << 10;

			KVReceiver r = decode.receiver(source.bootstrapAddress(), 7);
			r.sendMetadata(pages, -1, new int[0]);
			vts.advanceTime();
			assertThat(source.bytesSent()).as("at 0 ms").isEqualTo(block);
			assertThat(r.poll()).isEqualTo(KVPoll.TRANSFERRING);

			vts.advanceTimeBy(Duration.ofMillis(35));
			assertThat(source.bytesSent()).as("at 35 ms").isEqualTo(4 * block);
			vts.advanceTimeBy(Duration.ofMillis(35).minusNanos(1));
			assertThat(source.bytesSent()).as("just before 70 ms").isEqualTo(7 * block);
			assertThat(r.poll()).isEqualTo(KVPoll.TRANSFERRING);

			vts.advanceTimeBy(Duration.ofNanos(1));
			assertThat(source.bytesSent()).as("at 70 ms: 2 MiB at 25 MiB/s after one block at once")
					.isEqualTo(8 * block);
			StepVerifier.create(r.completion()).expectComplete().verify(T);
			assertThat(mem.verify(7, pages, -1, new int[0])).isNull();
		}
		finally {
			// The connections close on the virtual clock: let them, then stop it.
			managers.forEach(DecodeKVManager::dispose);
			managers.clear();
			vts.advanceTime();
			vts.dispose();
		}
	}

	@Test
	void theRoomRateStartsRoomsOnTheSourcesClock() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		try {
			RankMemory mem = RankMemory.decode(WIDE, ParallelLayout.SINGLE, 64, 1, 1);
			// 100 rooms/s: one room at once, then one every 10 ms, whatever the bytes.
			SyntheticPrefill source = SyntheticPrefill.builder().pageSize(WIDE.pageSize()).roomRate(100)
					.pattern(RankMemory.synthetic(List.of(mem))).scheduler(vts).build();
			sources.add(source);
			DecodeKVManager decode = KVManagerSpec.decode().kvArgs(mem.kvArgs()).transport(source.transport())
					.bootstrapClient(source.bootstrapClient()).stripes(1).timer(vts).startNow(T);
			managers.add(decode);
			List<KVReceiver> rooms = new ArrayList<>();
			for (int room = 0; room < 3; room++) {
				KVReceiver r = decode.receiver(source.bootstrapAddress(), 20 + room);
				r.sendMetadata(new int[] { 4 * room, 4 * room + 1 }, -1, new int[0]);
				rooms.add(r);
			}
			long room = mem.kvBytes(2);

			vts.advanceTime();
			assertThat(source.bytesSent()).as("at 0 ms").isEqualTo(room);
			vts.advanceTimeBy(Duration.ofMillis(10).minusNanos(1));
			assertThat(source.bytesSent()).as("just before 10 ms").isEqualTo(room);
			vts.advanceTimeBy(Duration.ofNanos(1));
			assertThat(source.bytesSent()).as("at 10 ms").isEqualTo(2 * room);
			vts.advanceTimeBy(Duration.ofMillis(10));
			assertThat(source.bytesSent()).as("at 20 ms").isEqualTo(3 * room);
			for (KVReceiver r : rooms) {
				StepVerifier.create(r.completion()).expectComplete().verify(T);
			}
			assertThat(source.roomsServed()).isEqualTo(3);
		}
		finally {
			managers.forEach(DecodeKVManager::dispose);
			managers.clear();
			vts.advanceTime();
			vts.dispose();
		}
	}
}
