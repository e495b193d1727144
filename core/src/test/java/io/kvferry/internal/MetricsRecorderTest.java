package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.kvferry.DecodeKVManager;
import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.KVMetricsRecorder;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.test.InMemoryPair;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * A manager tells its metrics recorder of every room it opens and ends, on its callback scheduler: a room that
 * succeeds and one that fails are each recorded once on each side, with the outcome, the cause and a duration, and
 * never on the thread (or under the lock) that moved the room.
 */
class MetricsRecorderTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(1, 1, 16, 2, 4, false, 0, 0, 0);
	private static final HostPort BOOTSTRAP = InMemoryPair.BOOTSTRAP;

	private final Scheduler callbacks = Schedulers.newSingle("kvferry-test-callbacks");
	private final BlockingQueue<String> calls = new LinkedBlockingQueue<>();
	private final KVMetricsRecorder recorder = new KVMetricsRecorder() {
		@Override
		public void roomOpened(String manager, DisaggregationMode mode) {
			calls.add(mode + " opened on " + Thread.currentThread().getName());
		}

		@Override
		public void roomEnded(RoomEnded ended) {
			assertThat(ended.durationNanos()).isNotNegative();
			calls.add(ended.mode() + " " + ended.outcome() + " " + ended.cause() + " on "
					+ Thread.currentThread().getName());
		}
	};
	private InMemoryPair pair;

	@AfterEach
	void close() {
		if (pair != null) {
			pair.close();
		}
		callbacks.dispose();
	}

	@Test
	void everyRoomIsRecordedOnceAsItOpensAndEndsOnTheCallbackScheduler() throws InterruptedException {
		pair = InMemoryPair.start(SHAPE, 16, p -> p.callbackScheduler(callbacks).metricsRecorder(recorder),
				d -> d.callbackScheduler(callbacks).metricsRecorder(recorder));
		PrefillKVManager prefill = pair.prefill;
		DecodeKVManager decode = pair.decode;

		KVReceiver ok = decode.receiver(BOOTSTRAP, 1);
		ok.sendMetadata(new int[] { 3 }, -1, new int[0]);
		KVSender sender = prefill.sender(1);
		sender.init(1, -1);
		sender.send(new int[] { 2 }, new int[0]);
		StepVerifier.create(ok.completion()).expectComplete().verify(T);
		StepVerifier.create(sender.completion()).expectComplete().verify(T);
		KVReceiver gone = decode.receiver(BOOTSTRAP, 2);
		gone.abort("client gone");
		StepVerifier.create(gone.completion()).expectError().verify(T);

		List<String> expected = List.of("PREFILL opened", "PREFILL SUCCESS null", "DECODE opened",
				"DECODE SUCCESS null", "DECODE opened", "DECODE FAILED ABORTED");
		List<String> seen = new java.util.ArrayList<>();
		for (int i = 0; i < expected.size(); i++) {
			String call = calls.poll(T.toMillis(), TimeUnit.MILLISECONDS);
			assertThat(call).as("recorder call %d of %s; so far %s", i + 1, expected, seen).isNotNull()
					.contains(" on kvferry-test-callbacks-");
			seen.add(call.substring(0, call.indexOf(" on ")));
		}
		assertThat(seen).containsExactlyInAnyOrderElementsOf(expected);
		assertThat(calls).isEmpty();
	}
}
