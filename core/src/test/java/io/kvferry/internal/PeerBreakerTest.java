package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVStats;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Decode's circuit breaker per prefill rank, on virtual time over the in-memory transport: failures in a row with a
 * rank open its breaker, its new rooms then fail at once as {@link FailureCause#PEER_UNAVAILABLE} without a connection
 * attempt, a probe runs every interval, and the first that reaches the rank readmits it.
 */
class PeerBreakerTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final int FAILURES = 3;
	private static final Duration PROBE = Duration.ofSeconds(1);

	private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	private final InMemoryBootstrap registry = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create(vts);
	private final Refusing dialler = new Refusing(transport);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	/** Decode dials through it: while it refuses, every connection attempt fails as a refused one does; it counts them. */
	private static final class Refusing implements KVTransport {
		private final KVTransport delegate;
		final AtomicInteger attempts = new AtomicInteger();
		volatile boolean refusing;

		Refusing(KVTransport delegate) {
			this.delegate = delegate;
		}

		@Override
		public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
			return delegate.listen(bindAddress, acceptor);
		}

		@Override
		public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
			attempts.incrementAndGet();
			return refusing ? Mono.error(new KVFerryException("connection refused: " + remote))
					: delegate.connect(remote, handler);
		}
	}

	@BeforeEach
	void start() {
		prefill = KVManagerSpec.prefill().kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs())
				.transport(transport).bootstrapClient(registry).bootstrapAddress(BOOTSTRAP)
				.bindAddress(new HostPort("127.0.0.1", 0)).timer(vts).startNow();
		decode = KVManagerSpec.decode().kvArgs(RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs())
				.transport(dialler).bootstrapClient(registry).timer(vts).peerBreaker(FAILURES, PROBE).startNow();
	}

	@AfterEach
	void stop() {
		decode.disposeNow(T);
		prefill.disposeNow(T);
	}

	private KVReceiver ask(long room) {
		KVReceiver r = decode.receiver(BOOTSTRAP, room);
		r.sendMetadata(new int[] { (int) room % 8 }, -1, new int[0]);
		vts.advanceTime();
		return r;
	}

	private void served(long room) {
		KVReceiver r = ask(room);
		KVSender s = prefill.sender(room);
		s.init(1, -1);
		s.send(new int[] { (int) room % 8 }, new int[0]);
		vts.advanceTime();
		StepVerifier.create(r.completion()).expectComplete().verify(T);
	}

	private static void failsWith(KVReceiver r, FailureCause cause, String... reason) {
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).as(k.reason()).isEqualTo(cause);
					for (String part : reason) {
						assertThat(k.reason()).contains(part);
					}
				})
				.verify(T);
	}

	@Test
	void failedConnectionsOpenTheBreakerAndAProbeThatReachesTheRankReadmitsIt() {
		served(1);
		int before = dialler.attempts.get();
		// The rank becomes unreachable: its connection goes, and every new one is refused.
		dialler.refusing = true;
		transport.disconnectAll(new CloseReason(CloseReason.Kind.PEER_CLOSED, "link down"));
		vts.advanceTime();
		for (long room = 2; room < 2 + FAILURES; room++) {
			failsWith(ask(room), FailureCause.BOOTSTRAP, "connection refused");
		}
		assertThat(dialler.attempts.get()).as("one attempt per room").isEqualTo(before + FAILURES);
		// Open: the next room fails at once, typed and naming the rank's last failure, without dialling it.
		failsWith(ask(10), FailureCause.PEER_UNAVAILABLE, "after " + FAILURES + " failures in a row",
				"connection refused", "of " + BOOTSTRAP);
		assertThat(dialler.attempts.get()).isEqualTo(before + FAILURES);
		KVStats open = decode.stats();
		assertThat(open.peerBreakersOpen()).isEqualTo(1);
		assertThat(open.peerBreakersOpened()).isEqualTo(1);
		assertThat(open.failures()).containsEntry(FailureCause.PEER_UNAVAILABLE, 1L);
		// A probe a second later still finds it unreachable: it stays open.
		vts.advanceTimeBy(PROBE);
		assertThat(dialler.attempts.get()).isEqualTo(before + FAILURES + 1);
		assertThat(decode.stats().peerProbesFailed()).isEqualTo(1);
		failsWith(ask(11), FailureCause.PEER_UNAVAILABLE, "probe: ");
		// The rank is reachable again: the next probe opens its session and readmits it.
		dialler.refusing = false;
		vts.advanceTimeBy(PROBE);
		assertThat(decode.stats().peerBreakersOpen()).isZero();
		int dialled = dialler.attempts.get();
		served(12);
		assertThat(dialler.attempts.get()).as("the probe's session serves the room").isEqualTo(dialled);
		assertThat(decode.stats().peerBreakersOpened()).isEqualTo(1);
	}

	@Test
	void roomsAReachableRankFailsNeverOpenItsBreaker() {
		served(1);
		// An abort storm on a healthy rank: it fails every room its engine gives up, and still answers.
		for (long room = 2; room < 2 + 3 * FAILURES; room++) {
			KVReceiver r = ask(room);
			prefill.sender(room).abort("client gone");
			vts.advanceTime();
			failsWith(r, FailureCause.ABORTED);
		}
		assertThat(decode.stats().peerBreakersOpened()).isZero();
		served(20);
	}

	@Test
	void onlyRanksWithFailuresAreHeldAndNoMoreThanTheBound() {
		PeerBreakers breakers = new PeerBreakers("bound", 2, PROBE, vts);
		for (int i = 0; i <= PeerBreakers.KEPT; i++) {
			breakers.failed(rank(i), "refused", Mono::empty);
		}
		assertThat(breakers.held()).isEqualTo(PeerBreakers.KEPT);
		breakers.failed(rank(PeerBreakers.KEPT), "refused", Mono::empty);
		assertThat(breakers.open()).isEqualTo(1);
		breakers.succeeded(rank(PeerBreakers.KEPT - 1));
		assertThat(breakers.held()).isEqualTo(PeerBreakers.KEPT - 1);
		// An open breaker is kept however many others fail; only a probe or the registry lets it go.
		for (int i = 0; i < 2 * PeerBreakers.KEPT; i++) {
			breakers.failed(rank(PeerBreakers.KEPT + 1 + i), "refused", Mono::empty);
		}
		assertThat(breakers.held()).isEqualTo(PeerBreakers.KEPT);
		assertThat(breakers.refusal(rank(PeerBreakers.KEPT))).contains("after 2 failures in a row");
		breakers.dispose();
	}

	private static SessionKey rank(int i) {
		return new SessionKey(new HostPort("10.0.0.1", 1000 + i), 0, 0, 0, 0);
	}

	@Test
	void aSessionThatOpensStartsTheCountAgain() {
		served(1);
		long room = 2;
		for (int round = 0; round < 3; round++) {
			dialler.refusing = true;
			transport.disconnectAll(new CloseReason(CloseReason.Kind.PEER_CLOSED, "link down"));
			vts.advanceTime();
			for (int k = 0; k < FAILURES - 1; k++) {
				failsWith(ask(room++), FailureCause.BOOTSTRAP, "connection refused");
			}
			dialler.refusing = false;
			served(room++);
		}
		assertThat(decode.stats().peerBreakersOpened()).isZero();
	}
}
