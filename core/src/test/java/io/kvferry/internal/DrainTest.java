package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.spi.PayloadSink;
import io.kvferry.transport.local.InMemoryKVTransport;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/** Draining a manager: no new room is admitted, rooms in flight end, and the deadline aborts the rest with a reason. */
class DrainTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final int[] NONE = new int[0];

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMemory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final RankMemory decodeMemory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2);
	private final VirtualTimeScheduler clock = VirtualTimeScheduler.create();
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	private void start(boolean virtualTime) {
		prefill = (virtualTime ? KVManagerSpec.prefill().timer(clock) : KVManagerSpec.prefill())
				.kvArgs(prefillMemory.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow(T);
		decode = (virtualTime ? KVManagerSpec.decode().timer(clock) : KVManagerSpec.decode())
				.kvArgs(decodeMemory.kvArgs()).transport(transport).bootstrapClient(bootstrap).startNow(T);
	}

	@AfterEach
	void close() {
		if (prefill != null) {
			prefill.disposeNow(T);
		}
		if (decode != null) {
			decode.disposeNow(T);
		}
		clock.dispose();
	}

	/** A room both sides hold and that waits for its pages: the sender is initialised, decode sent its pages. */
	private KVSender[] open(long room, KVReceiver[] receiver) {
		prefillMemory.fill(room, new int[] { 0, 1 }, 0, NONE);
		KVSender sender = prefill.sender(room);
		sender.init(2, 0);
		receiver[0] = decode.receiver(BOOTSTRAP, room);
		receiver[0].sendMetadata(new int[] { 3, 4 }, 1, NONE);
		StepVerifier.create(sender.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).take(1))
				.expectNext(KVPoll.WAITING_FOR_INPUT).expectComplete().verify(T);
		return new KVSender[] { sender };
	}

	private static void failsWith(Mono<Void> completion, FailureCause cause, String... reasonParts) {
		StepVerifier.create(completion)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(KVTransferException.class);
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).as(k.reason()).isEqualTo(cause);
					assertThat(k.reason()).contains(reasonParts);
				})
				.verify(T);
	}

	@Test
	void aDrainingPrefillFinishesItsRoomsRefusesNewOnesTellsDecodeAndLeavesTheRegistry() {
		start(false);
		KVReceiver[] receiver = new KVReceiver[1];
		KVSender sender = open(1, receiver)[0];
		String name = "prefill rank " + prefill + " (" + prefill.endpoint() + ") is draining";

		Mono<Void> drain = prefill.drain(T);
		assertThat(prefill.isDraining()).as("lazy: nothing before subscription").isFalse();
		AtomicBoolean drained = new AtomicBoolean();
		drain.subscribe(null, null, () -> drained.set(true));
		assertThat(prefill.isDraining()).isTrue();

		// A room the engine opens now is born failed, naming the draining rank.
		KVSender late = prefill.sender(2);
		assertThat(late.poll()).isEqualTo(KVPoll.FAILED);
		failsWith(late.completion(), FailureCause.DRAINING, name);
		// Decode is told: a new room for this rank fails at once with the same cause, not after a timeout.
		KVReceiver refused = decode.receiver(BOOTSTRAP, 3);
		refused.sendMetadata(new int[] { 5 }, -1, NONE);
		failsWith(refused.completion(), FailureCause.DRAINING, name);
		// The registration is withdrawn: no decode rank can find this rank any more. It goes once the notice was
		// written on every connection, which may be after decode read it and refused room 3.
		StepVerifier.create(((BaseKVManager<?, ?>) prefill).drainResources()).expectComplete().verify(T);
		StepVerifier.create(bootstrap.rankEndpoint(BOOTSTRAP, 0, 0, 0))
				.expectError(BootstrapException.class).verify(T);

		assertThat(drained).as("room 1 is still in flight").isFalse();
		sender.send(new int[] { 0, 1 }, NONE);
		StepVerifier.create(Mono.when(sender.completion(), receiver[0].completion())).expectComplete().verify(T);
		assertThat(decodeMemory.verify(1, new int[] { 3, 4 }, 1, NONE)).isNull();
		StepVerifier.create(drain).expectComplete().verify(T);
		assertThat(prefill.stats().failures()).containsEntry(FailureCause.DRAINING, 1L);
		assertThat(decode.stats().failures()).containsEntry(FailureCause.DRAINING, 1L);
	}

	@Test
	void aTransferRequestThatCrossedTheDrainingNoticeIsRefusedWithTheReason() {
		start(false);
		// Decode connected (room 1 resolved the rank) before prefill drains.
		KVReceiver[] receiver = new KVReceiver[1];
		KVSender sender = open(1, receiver)[0];
		StepVerifier.create(prefill.drain(Duration.ZERO)).expectComplete().verify(T);
		failsWith(sender.completion(), FailureCause.DRAINING, "did not end within the drain deadline of PT0S");
		failsWith(receiver[0].completion(), FailureCause.DRAINING, "did not end within the drain deadline of PT0S");
		// A room decode asks for meanwhile finds the rank draining.
		KVReceiver next = decode.receiver(BOOTSTRAP, 2);
		next.sendMetadata(new int[] { 2 }, -1, NONE);
		failsWith(next.completion(), FailureCause.DRAINING, "is draining and admits no new rooms");
	}

	/**
	 * Decode connects to prefill, prefill drains and goes away; the bootstrap server still names it, as SGLang's HTTP
	 * server does, which cannot forget a rank.
	 *
	 * @return the endpoint of the rank that went away
	 */
	private HostPort drainedAndGone() {
		start(false);
		open(1, new KVReceiver[1]);
		HostPort endpoint = prefill.endpoint();
		StepVerifier.create(prefill.drain(Duration.ZERO)).expectComplete().verify(T);
		prefill.disposeNow(T);
		prefill = null;
		StepVerifier.create(bootstrap.register(BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE,
				endpoint.host(), endpoint.port(), SHAPE.pageSize()))).expectComplete().verify(T);
		return endpoint;
	}

	/** A new room for the rank that went away fails because it drained, not as a bare connection failure. */
	private void aNewRoomFailsBecauseItDrained(HostPort endpoint) {
		KVReceiver next = decode.receiver(BOOTSTRAP, 2);
		next.sendMetadata(new int[] { 2 }, -1, NONE);
		failsWith(next.completion(), FailureCause.DRAINING, "prefill rank " + endpoint + " drained (",
				"is draining and admits no new rooms", ") and is gone: ");
	}

	@Test
	void aRoomForARankThatDrainedAndWentAwayFailsBecauseItDrained() {
		aNewRoomFailsBecauseItDrained(drainedAndGone());
	}

	@Test
	void aRoomWhoseConnectionADrainedRankDroppedBeforeTheHandshakeFailsBecauseItDrained() {
		HostPort endpoint = drainedAndGone();
		// What a rank's listener does while its process goes away: it takes the connection, then drops it unanswered.
		KVTransport.Listener goingAway = transport.listen(endpoint, c -> new ConnectionHandler() {
			@Override
			public void onMessage(KVConnection connection, KVMessage message) {
				connection.close("the process is exiting");
			}

			@Override
			public PayloadSink onData(KVConnection connection, DataHeader header) {
				return null;
			}

			@Override
			public void onClose(KVConnection connection, CloseReason reason) {
			}
		}).block(T);
		try {
			aNewRoomFailsBecauseItDrained(endpoint);
		}
		finally {
			goingAway.dispose();
		}
	}

	@Test
	void pastTheDeadlineRoomsInFlightAreAbortedWithTheReasonAndTheDrainCompletes() {
		start(true);
		KVReceiver[] receiver = new KVReceiver[1];
		KVSender sender = open(1, receiver)[0];
		AtomicBoolean drained = new AtomicBoolean();
		StepVerifier.create(prefill.drain(Duration.ofSeconds(30)).doOnSuccess(v -> drained.set(true)))
				.expectSubscription()
				.then(() -> clock.advanceTimeBy(Duration.ofSeconds(29)))
				.then(() -> {
					assertThat(sender.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
					assertThat(drained).isFalse();
				})
				.then(() -> clock.advanceTimeBy(Duration.ofSeconds(1)))
				.expectComplete()
				.verify(T);
		failsWith(sender.completion(), FailureCause.DRAINING, "prefill-dp0-tp0-pp0 was draining and room 1 did not end "
				+ "within the drain deadline of PT30S; aborted");
		failsWith(receiver[0].completion(), FailureCause.DRAINING, "failed room 1", "drain deadline of PT30S");
	}

	@Test
	void aDrainingDecodeFailsNewReceiversAtOnceAndLetsRoomsInFlightFinish() {
		start(false);
		KVReceiver[] receiver = new KVReceiver[1];
		KVSender sender = open(1, receiver)[0];
		Mono<Void> drain = decode.drain(T);
		AtomicBoolean drained = new AtomicBoolean();
		drain.subscribe(null, null, () -> drained.set(true));

		KVReceiver late = decode.receiver(BOOTSTRAP, 2);
		assertThat(late.poll()).isEqualTo(KVPoll.FAILED);
		failsWith(late.completion(), FailureCause.DRAINING, "KV manager decode-dp0-tp0-pp0 is draining");
		assertThat(drained).isFalse();

		sender.send(new int[] { 0, 1 }, NONE);
		StepVerifier.create(Mono.when(sender.completion(), receiver[0].completion())).expectComplete().verify(T);
		StepVerifier.create(drain).expectComplete().verify(T);
		// Draining does not close: the manager still answers until disposed.
		assertThat(decode.isDisposed()).isFalse();
	}

	@Test
	void anIdleManagerDrainsAtOnceAndADisposedOneToo() {
		start(false);
		StepVerifier.create(prefill.drain(T)).expectComplete().verify(T);
		StepVerifier.create(prefill.drain(T)).as("again").expectComplete().verify(T);
		decode.dispose();
		StepVerifier.create(decode.drain(T)).expectComplete().verify(T);
		assertThatThrownBy(() -> prefill.drain(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("deadline : PT-1S (expected: >= 0)");
	}
}
