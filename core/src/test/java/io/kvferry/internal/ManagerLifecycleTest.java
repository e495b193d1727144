package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** Starting and stopping a manager, and what it does when its own subscribers fall behind. */
class ManagerLifecycleTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	/** A bootstrap server that takes registrations and never answers them. */
	private static final class Unanswering implements BootstrapClient {
		final InMemoryBootstrap delegate = new InMemoryBootstrap();

		@Override
		public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
			return Mono.never();
		}

		@Override
		public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
			return delegate.parallelInfo(bootstrap);
		}

		@Override
		public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
			return delegate.rankEndpoint(bootstrap, dpGroup, tpRank, ppRank);
		}

		@Override
		public Mono<Void> health(HostPort bootstrap) {
			return delegate.health(bootstrap);
		}
	}

	@Test
	void aStartThatTimesOutSaysWhatDidNotStartAndClosesTheListenerItOpened() {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		HostPort bind = new HostPort("127.0.0.1", 47001);
		KVManagerSpec spec = KVManagerSpec.prefill()
				.kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(new Unanswering()).bootstrapAddress(BOOTSTRAP).bindAddress(bind);
		assertThatThrownBy(() -> spec.startNow(Duration.ofMillis(300)))
				.isInstanceOf(KVFerryException.class)
				.hasMessage("prefill-dp0-tp0-pp0 did not start within PT0.3S: registration with the bootstrap server "
						+ "127.0.0.1:8998 did not complete");
		// The address is free again: the cancelled start closed its listener.
		StepVerifier.create(transport.listen(bind, c -> new io.kvferry.test.NoopConnectionHandler()))
				.assertNext(Disposable::dispose).verifyComplete();
	}

	@Test
	void roomRequestsThatNoSubscriberTakesFailTheirRoomsInsteadOfLeavingThemWaiting() throws InterruptedException {
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		PrefillKVManager prefill = KVManagerSpec.prefill()
				.kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.eventBufferSize(1).startNow();
		DecodeKVManager decode = KVManagerSpec.decode()
				.kvArgs(RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).startNow();
		CountDownLatch release = new CountDownLatch(1);
		CountDownLatch first = new CountDownLatch(1);
		// An engine stuck on its first request: the rest pile up behind it.
		Disposable engine = prefill.roomRequests().subscribe(r -> {
			first.countDown();
			try {
				release.await(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException e) {
				Thread.currentThread().interrupt();
			}
		});
		try {
			int rooms = HotStream.HANDOFF + 10;
			int dropped = rooms - HotStream.HANDOFF - 1;
			// The subscriber holds its hand-off (32 requests) and a buffer of 1, which keeps the newest: every request
			// in between is dropped, and its room fails rather than wait for a sender nobody makes.
			// Prefill's own event stream has the same one-item buffer, so under load it may drop events too: the count
			// is read from its statistics, the reasons from decode, which hears of each failure.
			java.util.concurrent.CompletableFuture<List<io.kvferry.KVStatusEvent>> told = decode.events()
					.filter(e -> e.current() == KVPoll.FAILED).take(dropped).collectList().toFuture();
			List<KVReceiver> receivers = new ArrayList<>();
			for (int room = 1; room <= rooms; room++) {
				KVReceiver r = decode.receiver(BOOTSTRAP, room);
				r.sendMetadata(new int[] { 1 }, -1, new int[0]);
				receivers.add(r);
			}
			assertThat(first.await(T.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
			// Decode hears of each of them, and of no other.
			assertThat(told).succeedsWithin(T).satisfies(list -> assertThat(list).allSatisfy(e -> assertThat(
					e.reason()).contains("was dropped: a roomRequests() subscriber fell more than 1 requests behind")));
			assertThat(prefill.stats().failures()).containsEntry(io.kvferry.FailureCause.OVERLOAD, (long) dropped);
			long waiting = receivers.stream().filter(r -> r.poll() == KVPoll.WAITING_FOR_INPUT).count();
			assertThat(waiting).as("the requests the subscriber still holds").isEqualTo(rooms - dropped);
		}
		finally {
			release.countDown();
			engine.dispose();
			prefill.disposeNow(T);
			decode.disposeNow(T);
		}
	}
}
