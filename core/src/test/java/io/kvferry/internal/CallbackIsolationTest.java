package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.harness.RoomResult;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * Subscribers are the user's code: one that blocks for seconds, or calls back into the library from its callback,
 * must hold up only itself. Transfers of other rooms go on, and nothing deadlocks.
 */
class CallbackIsolationTest {

	private static final Duration T = Duration.ofSeconds(20);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	// Released at the end: the "blocking for seconds" subscribers wait on it, bounded.
	private final CountDownLatch release = new CountDownLatch(1);
	private final List<Disposable> subscriptions = new ArrayList<>();
	private KVCluster cluster;

	private KVCluster cluster(UnaryOperator<KVManagerSpec<?, ?>> custom) {
		cluster = KVCluster.builder().shape(SHAPE).capacity(256, 64).transport(InMemoryKVTransport.create())
				.bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(BOOTSTRAP).customize(custom).startNow(T);
		return cluster;
	}

	@AfterEach
	void close() {
		release.countDown();
		subscriptions.forEach(Disposable::dispose);
		if (cluster != null) {
			cluster.close().block(T);
		}
	}

	private void blockUntilReleased() {
		try {
			release.await(30, TimeUnit.SECONDS);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
		}
	}

	private List<RoomResult> runRooms(long first, int n) {
		return Flux.range(0, n).flatMap(i -> cluster.run(first + i, 16 + 4 * (i % 8), 2, new Random(i)), 8)
				.collectList().block(T);
	}

	@Test
	void anEventSubscriberThatBlocksHoldsUpNoTransfer() {
		cluster(UnaryOperator.identity());
		CountDownLatch blocked = new CountDownLatch(1);
		for (KVManager m : List.of(cluster.decodeManagers().get(0), cluster.prefillManagers().get(0).get(0))) {
			subscriptions.add(m.events().subscribe(e -> {
				blocked.countDown();
				blockUntilReleased();
			}));
		}
		List<RoomResult> results = runRooms(1, 40);
		assertThat(results).hasSize(40).allMatch(RoomResult::ok, "ok");
		assertThat(blocked.getCount()).as("the subscriber was reached").isZero();
		assertThat(release.getCount()).as("and is still blocked while the rooms finished").isEqualTo(1);
	}

	@Test
	void aRoomSubscriberThatBlocksHoldsUpOnlyItself() {
		cluster(UnaryOperator.identity());
		DecodeKVManager decode = cluster.decodeManagers().get(0);
		PrefillKVManager prefill = cluster.prefillManagers().get(0).get(0);
		KVReceiver stuck = decode.receiver(BOOTSTRAP, 1000);
		CountDownLatch inCallback = new CountDownLatch(1);
		subscriptions.add(stuck.states().subscribe(s -> {
			inCallback.countDown();
			blockUntilReleased();
		}));
		List<RoomResult> results = runRooms(1, 20);
		assertThat(results).allMatch(RoomResult::ok, "ok");
		assertThat(inCallback.getCount()).isZero();
		// The blocked subscriber's room still runs: its own state moves on, only the callback waits.
		KVSender sender = prefill.sender(1000);
		stuck.sendMetadata(new int[] { 200 }, 60, new int[0]);
		sender.init(1, 60);
		sender.send(new int[] { 200 }, new int[0]);
		StepVerifier.create(sender.completion()).verifyComplete();
		// A second subscriber of the same room gets its own worker: it is not behind the blocked one.
		StepVerifier.create(stuck.completion()).verifyComplete();
		assertThat(release.getCount()).as("the first subscriber is still blocked").isEqualTo(1);
	}

	@Test
	void aCallbackMayAbortOtherRoomsAndStartNewOnesWithoutDeadlock() {
		cluster(UnaryOperator.identity());
		DecodeKVManager decode = cluster.decodeManagers().get(0);
		PrefillKVManager prefill = cluster.prefillManagers().get(0).get(0);
		RankMemory memory = cluster.prefillMemory().get(0).get(0);
		// Rooms 2000 and 2001 wait; the first state change of room 2002 aborts both from its callbacks, on both sides.
		KVReceiver victim = decode.receiver(BOOTSTRAP, 2000);
		victim.sendMetadata(new int[] { 10 }, 1, new int[0]);
		KVSender victimSender = prefill.sender(2001);
		KVReceiver trigger = decode.receiver(BOOTSTRAP, 2002);
		subscriptions.add(trigger.states().take(1).subscribe(s -> {
			victim.abort("aborted from room 2002's callback");
			victimSender.abort("aborted from room 2002's callback");
		}));
		subscriptions.add(decode.events().filter(e -> e.room() == 2000 && e.current() == KVPoll.FAILED)
				.subscribe(e -> prefill.sender(2003)));
		StepVerifier.create(victim.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("aborted from room 2002's callback"))
				.verify(T);
		StepVerifier.create(victimSender.completion()).expectError(KVTransferException.class).verify(T);
		memory.fill(2002, new int[] { 3 }, 0, new int[0]);
		trigger.sendMetadata(new int[] { 30 }, 2, new int[0]);
		KVSender s = prefill.sender(2002);
		s.init(1, 0);
		s.send(new int[] { 3 }, new int[0]);
		StepVerifier.create(trigger.completion()).verifyComplete();
		assertThat(runRooms(1, 10)).allMatch(RoomResult::ok, "ok");
	}

	@Test
	void crossAbortsFromTwoThreadsAtOnceNeverDeadlock() throws Exception {
		cluster(UnaryOperator.identity());
		DecodeKVManager decode = cluster.decodeManagers().get(0);
		PrefillKVManager prefill = cluster.prefillManagers().get(0).get(0);
		java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(2);
		try {
			for (long room = 3000; room < 3200; room++) {
				// As a router does: when one side of a room fails, the other side is aborted from the callback.
				KVReceiver receiver = decode.receiver(BOOTSTRAP, room);
				KVSender sender = prefill.sender(room);
				subscriptions.add(receiver.completion().subscribe(null, e -> sender.abort("decode failed")));
				subscriptions.add(sender.completion().subscribe(null, e -> receiver.abort("prefill failed")));
				java.util.concurrent.CyclicBarrier together = new java.util.concurrent.CyclicBarrier(2);
				java.util.concurrent.Future<?> a = threads.submit(() -> {
					together.await();
					receiver.abort("client went away");
					return null;
				});
				java.util.concurrent.Future<?> b = threads.submit(() -> {
					together.await();
					sender.abort("prefill gave up");
					return null;
				});
				a.get(10, TimeUnit.SECONDS);
				b.get(10, TimeUnit.SECONDS);
				StepVerifier.create(receiver.completion()).expectError(KVTransferException.class).verify(T);
				StepVerifier.create(sender.completion()).expectError(KVTransferException.class).verify(T);
			}
		}
		finally {
			threads.shutdownNow();
		}
	}

	@Test
	void callbacksRunOnTheCallbackSchedulerNotOnTransportThreads() {
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		PrefillKVManager prefill = KVManagerSpec.prefill()
				.kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.startNow();
		DecodeKVManager decode = KVManagerSpec.decode()
				.kvArgs(RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).startNow();
		try {
			List<String> threads = new ArrayList<>();
			KVReceiver r = decode.receiver(BOOTSTRAP, 5);
			StepVerifier.create(r.states().doOnNext(s -> threads.add(Thread.currentThread().getName())))
					.then(() -> r.sendMetadata(new int[] { 1 }, -1, new int[0]))
					.thenConsumeWhile(s -> s != KVPoll.WAITING_FOR_INPUT)
					.expectNext(KVPoll.WAITING_FOR_INPUT)
					.then(() -> r.abort("done"))
					.expectNext(KVPoll.FAILED)
					.verifyComplete();
			assertThat(threads).allMatch(t -> t.startsWith("boundedElastic"), "on the callback scheduler");
		}
		finally {
			prefill.disposeNow(T);
			decode.disposeNow(T);
		}
	}
}
