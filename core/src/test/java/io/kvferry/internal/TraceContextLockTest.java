package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
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
import reactor.test.StepVerifier;

/** A tracer's {@code context()} is user code: decode reads it for the room's requests with no room monitor held. */
class TraceContextLockTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(1, 1, 16, 2, 4, false, 0, 0, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 16, 0, 0);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 16, 0, 0);
	// One entry per context() call: whether the decode room's monitor was held.
	private final List<Boolean> underLock = new CopyOnWriteArrayList<>();
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@AfterEach
	void close() {
		for (KVManager m : new KVManager[] { prefill, decode }) {
			if (m != null) {
				m.disposeNow(T);
			}
		}
	}

	@Test
	void contextIsReadWithNoRoomMonitorHeld() {
		RoomTracer tracer = (side, manager, room, parent, start) -> new RoomTrace() {
			@Override
			public void event(Event event, long value) {
			}

			@Override
			public String context() {
				Object r = ((BaseKVManager<?>) decode).table.get(room);
				underLock.add(r != null && Thread.holdsLock(r));
				return "ctx-" + room;
			}
		};
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.stripes(1).tracer(tracer).startNow();
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
	}
}
