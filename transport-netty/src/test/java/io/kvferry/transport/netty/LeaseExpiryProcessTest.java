package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.Child;
import io.kvferry.test.RenewalTap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * A decode process that asked for rooms is stopped with SIGSTOP: it renews nothing any more, but the kernel keeps its
 * socket open, and its heartbeats are set far apart, so nothing but the leases can notice. Every room's pages on
 * prefill are freed (the sender's {@code completion()} errors, {@code LEASE_EXPIRED}) within one lease period (plus
 * one tick and the scheduling slack of a loaded machine) of the last renewal prefill received, while the connection
 * stays open; once the process runs again, decode learns why its rooms failed.
 */
@Timeout(300)
class LeaseExpiryProcessTest {

	static final ModelShape SHAPE = new ModelShape(2, 1, 16, 2, 4, false, 0, 0, 0);
	private static final Duration LEASE = Duration.ofSeconds(2);
	/** Far longer than the lease: heartbeats must not be what frees the pages. */
	private static final Duration HEARTBEAT = Duration.ofSeconds(30);
	private static final int ROOMS = 200;
	/** Past one lease period: one tick (a tenth of it) and the scheduling of the expiry on a loaded 2-core machine. */
	private static final Duration SLACK = LEASE.dividedBy(10).plusMillis(500);
	private static final Duration START = Duration.ofSeconds(60);
	private static final Duration T = Duration.ofSeconds(30);

	@Test
	void pagesHeldForAStoppedDecodeAreFreedWithinOneLeasePeriodOfItsLastRenewal() throws Exception {
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		RankMemory memory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, ROOMS + 1, 0, 0);
		NettyKVTransport transport = NettyKVTransport.create().eventLoopThreads(1).heartbeatInterval(HEARTBEAT);
		RenewalTap tap = RenewalTap.of(transport);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(memory.kvArgs()).transport(tap)
				.bootstrapClient(ReactorBootstrapClient.create()).bootstrapAddress(bootstrap.address())
				.bindAddress(new HostPort("127.0.0.1", 0)).leasePeriod(LEASE)
				// Completions on the thread that ended the room, so that each is stamped when its lease expired, not
				// when a busy callback worker got to it.
				.callbackScheduler(Schedulers.immediate()).startNow();
		AtomicInteger claimed = new AtomicInteger();
		Map<Long, Long> freedAt = new ConcurrentHashMap<>();
		Map<Long, Throwable> why = new ConcurrentHashMap<>();
		CountDownLatch freed = new CountDownLatch(ROOMS);
		// The engine claims each room and has not computed it yet: it holds the room's pages until completion() ends.
		Disposable engine = prefill.roomRequests().subscribe(r -> {
			KVSender s = prefill.sender(r.room());
			s.init(1, -1);
			s.completion().subscribe(null, e -> {
				freedAt.put(r.room(), System.nanoTime());
				why.put(r.room(), e);
				freed.countDown();
			});
			claimed.incrementAndGet();
		});
		try (Child decode = Child.startMain("decode", LeaseDecodeMain.class, bootstrap.address().toString(),
				String.valueOf(ROOMS), String.valueOf(HEARTBEAT.toMillis()))) {
			decode.awaitLine("^waiting " + ROOMS + "$", START);
			Flux.interval(Duration.ofMillis(20)).filter(i -> claimed.get() == ROOMS).next().block(T);
			// Renewals flow for the claimed rooms before decode is stopped.
			long before = tap.received();
			Flux.interval(Duration.ofMillis(20)).filter(i -> tap.received() >= before + 2).next().block(T);

			decode.suspend();
			long stopped = System.nanoTime();
			try {
				assertThat(freed.await(LEASE.multipliedBy(4).toMillis(), TimeUnit.MILLISECONDS))
						.as("every room freed; freed so far: " + freedAt.size()).isTrue();
				long last = tap.lastReceivedNanos();
				long first = Collections.min(freedAt.values()) - last;
				long latest = Collections.max(freedAt.values()) - last;
				System.out.printf(Locale.ROOT, "decode stopped %d ms after its last renewal; its %d rooms were freed "
						+ "%d to %d ms after that renewal (lease %d ms, heartbeat %d ms)%n",
						Duration.ofNanos(stopped - last).toMillis(), ROOMS, Duration.ofNanos(first).toMillis(),
						Duration.ofNanos(latest).toMillis(), LEASE.toMillis(), HEARTBEAT.toMillis());
				assertThat(why.values()).allSatisfy(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).as(k.reason()).isEqualTo(FailureCause.LEASE_EXPIRED);
					assertThat(k.reason()).contains("lease on room " + k.room() + " expired: no renewal from decode "
							+ "rank ").contains("it renewed nothing since");
				});
				assertThat(first).as("ns from the last renewal to the first room freed")
						.isGreaterThanOrEqualTo(LEASE.toNanos());
				assertThat(latest).as("ns from the last renewal to the last room freed")
						.isLessThanOrEqualTo(LEASE.plus(SLACK).toNanos());
				// The connection is still there: the leases freed the pages, not a heartbeat loss.
				assertThat(prefill.stats().connections()).isOne();
				assertThat(prefill.stats().heartbeatLosses()).isZero();
				assertThat(prefill.stats().liveRooms()).isEmpty();
			}
			finally {
				decode.resume();
			}
			// Running again, decode reads prefill's reports: its rooms failed because their leases expired, which the
			// reports' failure code says.
			decode.awaitLine("^failed \\d+ LEASE_EXPIRED .*lease on room \\d+ expired", T);
		}
		finally {
			engine.dispose();
			prefill.disposeNow(T);
			transport.disposeNow(T);
			bootstrap.disposeNow();
		}
	}
}
