package io.kvferry.internal;

import java.time.Duration;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.harness.ModelShape;
import io.kvferry.test.InMemoryPair;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Optimistic prefill: the engine sends before decode asked for the room. The chunks wait in the sender and go when
 * the request arrives; a room whose request does not come in time, or one over the bound on such rooms, fails with
 * REQUEUE so that the engine frees its pages instead of pinning them until the bootstrap timeout.
 */
class OptimisticSendsTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 1, 16, 2, 4, false, 0, 0, 0);
	private static final int[] SRC = { 3, 5 };
	private static final int[] DST = { 7, 1 };

	private InMemoryPair pair;
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@AfterEach
	void close() {
		if (pair != null) {
			pair.close();
		}
	}

	private void start(UnaryOperator<PrefillSpec> prefillSpec) {
		pair = InMemoryPair.start(SHAPE, 16, prefillSpec, d -> d);
		prefill = pair.prefill;
		decode = pair.decode;
	}

	private KVSender sendEarly(long room) {
		pair.prefillMemory.fill(room, SRC, -1, new int[0]);
		KVSender s = prefill.sender(room);
		s.init(SRC.length, -1);
		s.send(SRC, new int[0]);
		return s;
	}

	private KVReceiver ask(long room) {
		KVReceiver r = decode.receiver(InMemoryPair.BOOTSTRAP, room);
		r.sendMetadata(DST, -1, new int[0]);
		return r;
	}

	private static void requeued(KVSender s, String reason) {
		StepVerifier.create(s.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.REQUEUE);
			assertThat(k.reason()).contains(reason);
		}).verify(T);
	}

	@Test
	void chunksSentBeforeTheRequestWaitAndLandWhenDecodeAsks() {
		start(p -> p);
		KVSender s = sendEarly(1);
		assertThat(s.poll()).isEqualTo(KVPoll.BOOTSTRAPPING);

		KVReceiver r = ask(1);

		StepVerifier.create(r.completion()).verifyComplete();
		StepVerifier.create(s.completion()).verifyComplete();
		assertThat(pair.decodeMemory.verify(1, DST, -1, new int[0])).isNull();
	}

	@Test
	void aRoomWhoseRequestDoesNotComeInTimeFailsWithRequeueAndFreesItsPlace() {
		start(p -> p.optimisticSends(1, Duration.ofMillis(200)));
		KVSender early = sendEarly(1);

		requeued(early, "room 1 was sent before decode asked for it, and no decode rank asked within 200 ms: release "
				+ "its pages and queue it again");
		// Its place among the rooms holding early chunks is free again: the next one waits instead of failing.
		KVSender next = sendEarly(2);
		KVReceiver r = ask(2);
		StepVerifier.create(r.completion()).verifyComplete();
		StepVerifier.create(next.completion()).verifyComplete();
		assertThat(pair.decodeMemory.verify(2, DST, -1, new int[0])).isNull();
	}

	@Test
	void aRoomOverTheBoundFailsAtOnceAndTheBoundFreesWhenARoomIsAskedFor() {
		start(p -> p.optimisticSends(1, Duration.ofSeconds(60)));
		KVSender first = sendEarly(1);

		KVSender second = sendEarly(2);
		requeued(second, "room 2 was sent before decode asked for it, and 1 rooms already hold such chunks");
		assertThat(first.poll()).isEqualTo(KVPoll.BOOTSTRAPPING);

		KVReceiver r = ask(1);
		StepVerifier.create(r.completion()).verifyComplete();
		KVSender third = sendEarly(3);
		assertThat(third.poll()).isEqualTo(KVPoll.BOOTSTRAPPING);
		KVReceiver r3 = ask(3);
		StepVerifier.create(r3.completion()).verifyComplete();
		StepVerifier.create(third.completion()).verifyComplete();
	}

	@Test
	void aRoomAbortedWhileHoldingEarlyChunksFreesItsPlace() {
		start(p -> p.optimisticSends(1, Duration.ofSeconds(60)));
		KVSender first = sendEarly(1);
		first.abort("engine gave up");
		StepVerifier.create(first.completion()).expectError(KVTransferException.class).verify(T);

		KVSender second = sendEarly(2);
		assertThat(second.poll()).isEqualTo(KVPoll.BOOTSTRAPPING);
	}

	@Test
	void boundsAreChecked() {
		assertThatThrownBy(() -> KVManagerSpec.prefill().optimisticSends(0, Duration.ofSeconds(1)))
				.hasMessage("optimisticSends : 0 rooms, wait PT1S (expected: rooms >= 1, wait > 0)");
		assertThatThrownBy(() -> KVManagerSpec.prefill().optimisticSends(1, Duration.ZERO))
				.hasMessage("optimisticSends : 1 rooms, wait PT0S (expected: rooms >= 1, wait > 0)");
	}
}
