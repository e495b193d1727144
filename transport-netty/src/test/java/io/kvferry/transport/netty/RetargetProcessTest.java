package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;

import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.RoomHandoff;
import io.kvferry.bootstrap.client.ReactorBootstrapClient;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.Child;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.test.StepVerifier;

/**
 * A decode process is killed with SIGKILL while its room's bytes flow; a replacement decode process, which the test
 * (the request's owner) hands the room, claims it, and prefill serves it from the pages the engine still holds: every byte
 * lands in the replacement's pages, checked against the room's pattern, and the engine's sender succeeds. Once the
 * lease ran out, a replacement's claim fails at once as {@code LEASE_EXPIRED} and gets no byte. Prints the time each
 * replacement took from asking to Success.
 */
@Timeout(300)
class RetargetProcessTest {

	/** 4 layers, 8 KV heads of 128 bf16, 16 tokens a page: 256 KiB a page over the 8 buffers. */
	static final ModelShape SHAPE = new ModelShape(4, 8, 128, 2, 16, false, 0, 0, 0);
	/** Pages a room holds: 16 MiB. */
	static final int PAGES = 64;
	private static final int ROOMS = Integer.getInteger("kvferry.test.retargets", 3);
	/** Past a young JVM's start on a loaded machine: the replacement process is started after the kill. */
	private static final Duration LEASE = Duration.ofSeconds(20);
	/**
	 * The lease of the prefill whose room nobody claims in time: the test waits it out, and no replacement has to
	 * start within it. Twice the 3 s leases that a thousand rooms keep under load in LeaseRenewalLoadTest, so that the
	 * first decode's renewals hold the room until it is killed.
	 */
	private static final Duration LATE_LEASE = Duration.ofSeconds(6);
	private static final Duration START = Duration.ofSeconds(60);
	private static final Duration T = Duration.ofSeconds(30);

	@Test
	void replacementsOfKilledDecodesGetEveryByte() throws Exception {
		List<Double> took = new ArrayList<>();
		withPrefill(LEASE, (bootstrap, memory, prefill) -> {
			for (long room = 1; room <= ROOMS; room++) {
				took.add(retarget(bootstrap, memory, prefill, room, false));
			}
		});
		System.out.printf(Locale.ROOT, "%d rooms of %d MiB re-targeted after kill -9 of their decode mid-transfer: "
				+ "replacement asked to Success (every byte verified) %s ms%n", ROOMS, PAGES * 256 / 1024, took);
	}

	@Test
	void aReplacementAfterTheLeaseGetsATypedFailureAndNoByte() throws Exception {
		withPrefill(LATE_LEASE, (bootstrap, memory, prefill) -> retarget(bootstrap, memory, prefill, 1, true));
	}

	private interface PrefillWork {
		void run(DisposableBootstrapServer bootstrap, RankMemory memory, PrefillKVManager prefill) throws Exception;
	}

	private static void withPrefill(Duration lease, PrefillWork work) throws Exception {
		DisposableBootstrapServer bootstrap = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		RankMemory memory = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, PAGES, 0, 0);
		NettyKVTransport transport = NettyKVTransport.create().eventLoopThreads(1);
		PrefillKVManager prefill = KVManagerSpec.prefill().kvArgs(memory.kvArgs()).transport(transport)
				.bootstrapClient(ReactorBootstrapClient.create()).bootstrapAddress(bootstrap.address())
				.bindAddress(new HostPort("127.0.0.1", 0)).leasePeriod(lease).startNow();
		try {
			work.run(bootstrap, memory, prefill);
		}
		finally {
			prefill.disposeNow(T);
			transport.disposeNow(T);
			bootstrap.disposeNow();
		}
	}

	/**
	 * Starts a decode process for {@code room}, kills it once the room's first bytes landed, then starts its
	 * replacement: {@code late}, only once the room's lease ran out.
	 *
	 * @return ms from the replacement asking to Success (every byte verified); -1 when {@code late}
	 */
	private static double retarget(DisposableBootstrapServer bootstrap, RankMemory memory, PrefillKVManager prefill,
			long room, boolean late) throws Exception {
		int[] src = new int[PAGES];
		Arrays.setAll(src, i -> i);
		int half = PAGES / 2;
		RoomHandoff owner = RoomHandoff.create();
		KVSender sender;
		try (Child first = Child.startMain("decode-" + room, RetargetDecodeMain.class, bootstrap.address().toString(),
				String.valueOf(room), owner.first().text(), "0")) {
			prefill.roomRequests().filter(q -> q.room() == room).next().block(START);
			memory.fill(room, src, -1, new int[0]);
			sender = prefill.sender(room);
			sender.init(PAGES, -1);
			sender.send(Arrays.copyOfRange(src, 0, half), new int[0]);
			first.awaitLine("^transferring " + room + "$", T);
			first.kill();
		}
		if (late) {
			// Nobody claims the room within its lease: prefill lets its pages go.
			StepVerifier.create(sender.completion())
					.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).failureCause())
							.isEqualTo(FailureCause.LEASE_EXPIRED))
					.verify(LATE_LEASE.multipliedBy(3));
		}
		else {
			// The engine goes on computing: the rest waits on prefill for the replacement.
			sender.send(Arrays.copyOfRange(src, half, PAGES), new int[0]);
			assertThat(sender.poll()).isNotEqualTo(KVPoll.FAILED);
		}
		try (Child second = Child.startMain("replacement-" + room, RetargetDecodeMain.class,
				bootstrap.address().toString(), String.valueOf(room), owner.handOff().text(), String.valueOf(PAGES))) {
			if (late) {
				second.awaitLine("^failed " + room + " LEASE_EXPIRED .*recompute", START);
				assertThat(second.stdout()).doesNotContain("transferring");
				return -1;
			}
			Matcher ok = second.awaitLine("^ok " + room + " verified ([0-9.]+)$", START);
			StepVerifier.create(sender.completion()).expectComplete().verify(T);
			return Double.parseDouble(ok.group(1));
		}
	}
}
