package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVStatusEvent;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.RenewalTap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * A thousand rooms wait on leases of 1.5 s between a prefill and a decode over real TCP on loopback, for five lease
 * periods, while a thread spins on a core of the (already shared) machine: decode's renewals keep every one of them,
 * and afterwards each room still moves its pages and succeeds. The longest gap between two renewals prefill received is
 * printed and must stay below the lease.
 */
@Timeout(180)
class LeaseRenewalLoadTest {

	/**
	 * What the test checks is relative to the lease: renewals every third of it, five periods without a failure, no
	 * gap as long as one. At 3 s the longest gap was the 1 s cadence plus 3 ms.
	 */
	private static final Duration LEASE = Duration.ofMillis(1500);
	private static final int ROOMS = 1000;
	private static final ModelShape SHAPE = new ModelShape(2, 1, 16, 2, 4, false, 0, 0, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final Duration T = Duration.ofSeconds(60);

	@Test
	void aThousandWaitingRoomsKeepTheirLeasesWhileDecodeRenewsThem() throws Exception {
		InMemoryBootstrap bootstrap = new InMemoryBootstrap();
		RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, ROOMS, 0, 0);
		RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, ROOMS, 0, 0);
		NettyKVTransport prefillTransport = NettyKVTransport.create().eventLoopThreads(1);
		NettyKVTransport decodeTransport = NettyKVTransport.create().eventLoopThreads(2);
		RenewalTap tap = RenewalTap.of(prefillTransport);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(tap)
				.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.leasePeriod(LEASE).startNow();
		DecodeKVManager decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs()).transport(decodeTransport)
				.bootstrapClient(bootstrap).startNow();
		Map<Long, KVSender> senders = new ConcurrentHashMap<>();
		// The engine claims every room decode asks for and computes nothing yet: the rooms wait.
		Disposable engine = prefill.roomRequests().subscribe(r -> {
			KVSender s = prefill.sender(r.room());
			s.init(1, -1);
			senders.put(r.room(), s);
		});
		Thread spinner = new Thread(LeaseRenewalLoadTest::spin, "lease-load-spinner");
		spinner.setDaemon(true);
		List<KVReceiver> receivers = new ArrayList<>();
		try {
			for (int room = 0; room < ROOMS; room++) {
				KVReceiver r = decode.receiver(BOOTSTRAP, room);
				r.sendMetadata(new int[] { room }, -1, new int[0]);
				receivers.add(r);
			}
			Flux.fromIterable(receivers).flatMap(r -> r.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).next())
					.then().block(T);
			Flux.interval(Duration.ofMillis(50)).filter(i -> senders.size() == ROOMS).next().block(T);
			spinner.start();
			long received = tap.received();

			StepVerifier.create(Flux.merge(prefill.events(), decode.events())
					.filter(e -> e.current() == KVPoll.FAILED).map(KVStatusEvent::reason))
					.expectSubscription()
					.expectNoEvent(LEASE.multipliedBy(5))
					.thenCancel()
					.verify(T);

			long renewals = tap.received() - received;
			System.out.printf(Locale.ROOT, "%d rooms waited %d ms on %d ms leases with a core spinning: %d renewals "
					+ "received (%.0f rooms each), the longest gap between two %d ms (renewed every %d ms)%n", ROOMS,
					LEASE.multipliedBy(5).toMillis(), LEASE.toMillis(), renewals,
					(double) tap.roomsReceived() / tap.received(), Duration.ofNanos(tap.longestGapNanos()).toMillis(),
					LEASE.dividedBy(3).toMillis());
			assertThat(senders.values()).allSatisfy(s -> assertThat(s.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT));
			assertThat(receivers).allSatisfy(r -> assertThat(r.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT));
			// One renewal per session and third of a lease, each listing the session's rooms, never one per room.
			assertThat(renewals).isBetween(10L, 40L);
			assertThat(tap.longestGapNanos()).isLessThan(LEASE.toNanos());

			spinner.interrupt();
			for (KVSender s : senders.values()) {
				int page = (int) s.room();
				prefillMem.fill(s.room(), new int[] { page }, -1, new int[0]);
				s.send(new int[] { page }, new int[0]);
			}
			Flux.fromIterable(receivers).flatMap(KVReceiver::completion, 64).then().block(T);
			for (KVReceiver r : receivers) {
				assertThat(decodeMem.verify(r.room(), new int[] { (int) r.room() }, -1, new int[0])).isNull();
			}
			Flux.fromIterable(senders.values()).flatMap(KVSender::completion, 64).then().block(T);
		}
		finally {
			spinner.interrupt();
			engine.dispose();
			decode.disposeNow(T);
			prefill.disposeNow(T);
			prefillTransport.disposeNow(T);
			decodeTransport.disposeNow(T);
		}
	}

	/** Keeps a core busy until interrupted. */
	private static void spin() {
		long x = 0;
		while (!Thread.currentThread().isInterrupted()) {
			x += System.nanoTime() % 7;
		}
		if (x == 42) {
			System.out.println(x);
		}
	}
}
