package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.RoomTrace;
import io.kvferry.RoomTracer;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryPair;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * A tracer's {@code context()} is user code: decode reads it with no room monitor held, and only on the thread that made
 * the receiver (where {@code start} runs too), never on a transport thread when the room's prefill ranks connect.
 */
class TraceContextLockTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(1, 1, 16, 2, 4, false, 0, 0, 0);

	// One entry per context() call: whether the decode room's monitor was held.
	private final List<Boolean> underLock = new CopyOnWriteArrayList<>();
	// One entry per context() call: the calling thread.
	private final List<Thread> callers = new CopyOnWriteArrayList<>();
	private static final HostPort BOOTSTRAP = InMemoryPair.BOOTSTRAP;

	private InMemoryPair pair;
	private PrefillKVManager prefill;
	private DecodeKVManager decode;
	private RankMemory prefillMem;

	@AfterEach
	void close() {
		if (pair != null) {
			pair.close();
		}
	}

	private void start(UnaryOperator<PrefillSpec> prefillSpec, UnaryOperator<DecodeSpec> decodeSpec) {
		pair = InMemoryPair.start(SHAPE, 16, prefillSpec, decodeSpec);
		prefill = pair.prefill;
		decode = pair.decode;
		prefillMem = pair.prefillMemory;
	}

	@Test
	void contextIsReadWithNoRoomMonitorHeld() {
		RoomTracer tracer = (side, manager, room, parent, start) -> new RoomTrace() {
			@Override
			public void event(Event event, long value) {
			}

			@Override
			public String context() {
				Object r = ((BaseKVManager<?, ?>) decode).table.get(room);
				underLock.add(r != null && Thread.holdsLock(r));
				callers.add(Thread.currentThread());
				return "ctx-" + room;
			}
		};
		start(p -> p, d -> d.tracer(tracer));
		for (long room = 1; room <= 2; room++) {
			// Room 1 resolves the instance first; room 2 reuses the route at once.
			KVReceiver r = decode.receiver(BOOTSTRAP, room);
			r.sendMetadata(new int[] { (int) room }, -1, new int[0]);
			prefillMem.fill(room, new int[] { 0 }, -1, new int[0]);
			KVSender s = prefill.sender(room);
			s.init(1, -1);
			s.send(new int[] { 0 }, new int[0]);
			StepVerifier.create(r.completion()).verifyComplete();
		}
		assertThat(underLock).isNotEmpty().doesNotContain(true);
		// Room 1's request goes out when its prefill rank connected, on the transport's thread: the context was read
		// before, when its receiver was made.
		assertThat(callers).isNotEmpty().containsOnly(Thread.currentThread());
	}
}
