package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.FaultRig.T;
import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Random;

import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;
import reactor.util.retry.Retry;

/**
 * The bootstrap server dies and a new, empty one comes up on the same port: prefill ranks register again on their own
 * (re-registration every 200 ms), a decode manager that never saw the instance resolves it through the new server, and
 * the decode manager that already knew it keeps moving rooms.
 */
class BootstrapRestartIT {

	private static final ModelShape SHAPE = new ModelShape(8, 4, 128, 2, 16, false, 0, 64, 0);
	private static final Duration REREGISTER = Duration.ofMillis(200);
	/** Re-registration runs every 200 ms but a registration in its retry back-off waits up to ~2 s more. */
	private static final Duration RELEARN_BOUND = Duration.ofSeconds(20);

	@Test
	void prefillRanksReRegisterWithARestartedServerAndAFreshDecodeResolvesThem() {
		try (FaultRig rig = FaultRig.start(SHAPE, 2, 2, 128, 16, NettyKVTransport.create(),
				spec -> spec instanceof PrefillSpec p ? p.reregisterInterval(REREGISTER) : spec)) {
			Random random = new Random(2);
			RoomResult before = rig.cluster.run(1, 40 * SHAPE.pageSize(), 3, random).block(T);
			assertThat(before.failure()).isNull();
			int port = rig.bootstrap().port();

			rig.stopServer();
			assertThat(rig.server().isDisposed()).isTrue();
			// disposeNow closes the kept-alive connections without waiting for them: a request may still be answered
			// on one for a moment, after which the server is unreachable.
			StepVerifier.create(rig.client.parallelInfo(rig.bootstrap())
					.repeatWhen(done -> done.delayElements(Duration.ofMillis(20)))
					.then())
					.expectError(BootstrapException.class)
					.verify(Duration.ofSeconds(10));

			rig.startServerAgain();
			long restartedAt = System.nanoTime();
			assertThat(rig.server().address().port()).isEqualTo(port);
			// The new server starts empty; the ranks' periodic registration fills it again.
			StepVerifier.create(rig.client.parallelInfo(rig.bootstrap())
					.retryWhen(Retry.fixedDelay(Long.MAX_VALUE, Duration.ofMillis(100))))
					.assertNext(info -> {
						assertThat(info.attnTpSize()).isEqualTo(2);
						assertThat(info.dpSize()).isEqualTo(1);
					})
					.expectComplete()
					.verify(RELEARN_BOUND);
			assertThat(Duration.ofNanos(System.nanoTime() - restartedAt)).isLessThan(RELEARN_BOUND);
			assertThat(rig.server().registeredCount()).isEqualTo(2);

			// A decode instance that never saw this prefill instance (TP 2, two fresh managers) resolves it anew.
			List<RankMemory> memory = List.of(rig.decodeMemory(2, 0), rig.decodeMemory(2, 1));
			List<DecodeKVManager> fresh = List.of(
					rig.startDecode(memory.get(0), new ParallelLayout(2, 0, 1, 0, 1, 0, 1, 0), "fresh-decode-0"),
					rig.startDecode(memory.get(1), new ParallelLayout(2, 1, 1, 0, 1, 0, 1, 0), "fresh-decode-1"));
			for (long id = 2; id <= 4; id++) {
				int[] pages = range((int) (id * 24), (int) (id * 24 + 20));
				LiveRoom room = LiveRoom.open(rig.bootstrap(), id, rig.cluster.prefillManagers().get(0),
						rig.cluster.prefillMemory().get(0), fresh, memory, pages, pages, (int) id, (int) id);
				room.send(0, 7);
				room.send(7, pages.length);
				StepVerifier.create(room.completion()).expectComplete().verify(T);
				assertThat(room.verify()).as("room %d", id).isNull();
			}

			// The decode instance that knew it all along still moves rooms (the bootstrap server is not on its path).
			for (long id = 10; id < 13; id++) {
				RoomResult r = rig.cluster.run(id, 1 + random.nextInt(40 * SHAPE.pageSize()), 1 + random.nextInt(4),
						random).block(T);
				assertThat(r.failure()).as("room %d", id).isNull();
			}
		}
	}
}
