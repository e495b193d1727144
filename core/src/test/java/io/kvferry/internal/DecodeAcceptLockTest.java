package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.HostPort;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryPair;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * The transport's threads land a room's bytes without its room's monitor: with that monitor held by another thread,
 * a chunk's bytes still land and complete the room's layers. Only the room's reports wait for it (so one connection:
 * the in-memory transport reads every connection on one thread, and a report waiting there would hold the others).
 */
class DecodeAcceptLockTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(3, 2, 16, 2, 4, false, 0, 0, 0);

	private static final HostPort BOOTSTRAP = InMemoryPair.BOOTSTRAP;

	private InMemoryPair pair;
	private PrefillKVManager prefill;
	private DecodeKVManager decode;
	private RankMemory prefillMem;
	private RankMemory decodeMem;

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
		decodeMem = pair.decodeMemory;
	}

	@Test
	void bytesLandWhileTheRoomMonitorIsHeld() {
		start(p -> p, d -> d);
		long room = 5;
		int[] src = { 1, 2 };
		int[] dst = { 7, 9 };
		prefillMem.fill(room, src, -1, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
		receiver.sendMetadata(dst, -1, new int[0]);
		KVSender sender = prefill.sender(room);
		sender.init(src.length, -1);
		// The first chunk moves the room to Transferring, the one state change its bytes make.
		sender.send(new int[] { src[0] }, new int[0]);
		StepVerifier.create(receiver.states().filter(s -> s == KVPoll.TRANSFERRING).next())
				.expectNext(KVPoll.TRANSFERRING).expectComplete().verify(T);
		Object monitor = ((BaseKVManager<?, ?>) decode).table.get(room);
		assertThat(monitor).isNotNull();
		List<Integer> layers;
		synchronized (monitor) {
			sender.send(new int[] { src[1] }, new int[0]);
			// Every layer completes with the last chunk's bytes, landed by the transport's threads meanwhile.
			layers = receiver.layers().take(SHAPE.layers()).collectList().block(T);
		}
		assertThat(layers).containsExactlyInAnyOrder(0, 1, 2);
		StepVerifier.create(receiver.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(room, dst, -1, new int[0])).isNull();
	}
}
