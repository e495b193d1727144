package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.DecodeKVManager;
import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomTrace;
import io.kvferry.RoomTracer;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A tracing integration is user code: it runs on the callback scheduler, never on a transport thread or under a room's
 * monitor, so a tracer that blocks holds up no transfer, and it still sees every room's steps in order.
 */
class TracerIsolationTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final int[] NONE = new int[0];

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMemory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final RankMemory decodeMemory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final CountDownLatch release = new CountDownLatch(1);
	// Three rooms, each ended on both sides.
	private final CountDownLatch ended = new CountDownLatch(6);
	private final List<String> calls = new CopyOnWriteArrayList<>();
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	/** Records each call with its thread, and blocks in every step until the test releases it. */
	private final RoomTracer blocking = (side, manager, room, parentContext, startEpochNanos) -> {
		calls.add(side + " start " + room + " on " + Thread.currentThread().getName());
		return new RoomTrace() {
			@Override
			public void event(Event event, long value) {
				calls.add(side + " " + event + " " + room + " on " + Thread.currentThread().getName());
				try {
					release.await(T.toMillis(), TimeUnit.MILLISECONDS);
				}
				catch (InterruptedException e) {
					Thread.currentThread().interrupt();
				}
			}

			@Override
			public void end(io.kvferry.KVPoll outcome, io.kvferry.FailureCause cause, String reason) {
				calls.add(side + " end " + room + " " + outcome + " on " + Thread.currentThread().getName());
				ended.countDown();
			}
		};
	};

	@AfterEach
	void close() {
		release.countDown();
		if (prefill != null) {
			prefill.disposeNow(T);
		}
		if (decode != null) {
			decode.disposeNow(T);
		}
	}

	@Test
	void aTracerThatBlocksHoldsUpNoTransferAndSeesEveryStepOffTheEngineThreads() throws InterruptedException {
		prefill = KVManagerSpec.prefill().tracer(blocking).kvArgs(prefillMemory.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.startNow(T);
		decode = KVManagerSpec.decode().tracer(blocking).kvArgs(decodeMemory.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).startNow(T);
		for (long room = 1; room <= 3; room++) {
			int[] pages = { (int) room * 2, (int) room * 2 + 1 };
			prefillMemory.fill(room, new int[] { 0, 1 }, 0, NONE);
			KVSender sender = prefill.sender(room);
			sender.init(2, 0);
			KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
			receiver.sendMetadata(pages, 1, NONE);
			sender.send(new int[] { 0, 1 }, NONE);
			// Every step of every room so far is stuck in the tracer: the transfer goes on regardless.
			StepVerifier.create(Mono.when(sender.completion(), receiver.completion())).expectComplete().verify(T);
			assertThat(decodeMemory.verify(room, pages, 1, NONE)).isNull();
		}
		release.countDown();
		assertThat(ended.await(T.toMillis(), TimeUnit.MILLISECONDS)).as("every trace ended: " + calls).isTrue();
		assertThat(calls).as("steps and ends run on the callback scheduler; only decode's start on the caller's thread")
				.allMatch(c -> c.contains("on boundedElastic-") || c.startsWith(DisaggregationMode.DECODE + " start"));
		for (long room = 1; room <= 3; room++) {
			long r = room;
			List<String> prefillSteps = calls.stream().filter(c -> c.startsWith("PREFILL ") && c.contains(" " + r + " "))
					.map(c -> c.substring(0, c.indexOf(" on "))).toList();
			assertThat(prefillSteps).as("room %d on prefill, in order", r).first().isEqualTo("PREFILL start " + r);
			assertThat(prefillSteps).last().isEqualTo("PREFILL end " + r + " SUCCESS");
		}
	}
}
