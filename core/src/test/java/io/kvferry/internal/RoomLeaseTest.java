package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

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
import io.kvferry.PrefillSpec;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.KVMessage;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.RenewalTap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Prefill holds the rooms decode asked for on leases that decode renews, on virtual time over the in-memory transport:
 * a room stays as long as its renewals come, and one decode stops renewing fails within one lease period (plus one
 * tick) of its last renewal, with a reason that says so, while the connection stays open.
 */
class RoomLeaseTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final Duration LEASE = Duration.ofSeconds(3);
	private static final ModelShape SHAPE = new ModelShape(2, 1, 16, 2, 4, false, 0, 0, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	private final RenewalTap tap = new RenewalTap(InMemoryKVTransport.create(vts),
			() -> vts.now(TimeUnit.NANOSECONDS));
	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 16, 0, 0);
	private final RankMemory decodeMem = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 16, 0, 0);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	private void start(UnaryOperator<PrefillSpec> prefillSpec) {
		start(prefillSpec, prefillMem, decodeMem, 4096);
	}

	private void start(UnaryOperator<PrefillSpec> prefillSpec, RankMemory prefillMemory, RankMemory decodeMemory,
			int maxRooms) {
		prefill = prefillSpec.apply(KVManagerSpec.prefill().kvArgs(prefillMemory.kvArgs()).transport(tap)
				.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.timer(vts)).startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMemory.kvArgs()).transport(tap).bootstrapClient(bootstrap)
				.stripes(1).maxRooms(maxRooms, maxRooms).timer(vts).startNow();
	}

	@AfterEach
	void close() {
		if (decode != null) {
			decode.dispose();
		}
		if (prefill != null) {
			prefill.dispose();
		}
		vts.advanceTime();
		vts.dispose();
	}

	/** Decode asks for the room and prefill's engine claims it without sending: the room waits on both sides. */
	private KVSender waiting(long room, KVReceiver[] receiver) {
		receiver[0] = decode.receiver(BOOTSTRAP, room);
		receiver[0].sendMetadata(new int[] { (int) room }, -1, new int[0]);
		vts.advanceTime();
		KVSender sender = prefill.sender(room);
		sender.init(1, -1);
		vts.advanceTime();
		assertThat(sender.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		assertThat(receiver[0].poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		return sender;
	}

	@Test
	void roomsWaitAsLongAsDecodeRenewsThemAndThenSucceed() {
		start(p -> p.leasePeriod(LEASE));
		KVReceiver[] one = new KVReceiver[1];
		KVReceiver[] two = new KVReceiver[1];
		KVSender first = waiting(1, one);
		KVSender second = waiting(2, two);
		vts.advanceTimeBy(LEASE.multipliedBy(20));
		assertThat(first.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		assertThat(second.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		// One renewal per session every third of the lease, each listing both rooms: never one per room.
		assertThat(tap.received()).isBetween(59L, 61L);
		assertThat(tap.roomsReceived()).isEqualTo(2 * tap.received());
		assertThat(tap.longestGapNanos()).isEqualTo(LEASE.dividedBy(3).toNanos());

		prefillMem.fill(1, new int[] { 1 }, -1, new int[0]);
		first.send(new int[] { 1 }, new int[0]);
		vts.advanceTime();
		StepVerifier.create(first.completion()).verifyComplete();
		StepVerifier.create(one[0].completion()).verifyComplete();
		assertThat(second.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
	}

	@Test
	void aRoomWhoseRenewalsStopFailsWithinOneLeasePeriodOfTheLastOneAndDecodeIsTold() {
		start(p -> p.leasePeriod(LEASE));
		KVReceiver[] receiver = new KVReceiver[1];
		KVSender sender = waiting(7, receiver);
		vts.advanceTimeBy(LEASE.multipliedBy(2));
		tap.dropRenewals();
		long last = tap.lastReceivedNanos();
		assertThat(last).isGreaterThan(0);
		while (sender.poll() != KVPoll.FAILED) {
			assertThat(vts.now(TimeUnit.NANOSECONDS) - last).as("still held").isLessThan(LEASE.multipliedBy(2)
					.toNanos());
			vts.advanceTimeBy(Duration.ofMillis(10));
		}
		long freed = vts.now(TimeUnit.NANOSECONDS) - last;
		assertThat(freed).as("ns from the last renewal to the room failing").isGreaterThanOrEqualTo(LEASE.toNanos())
				.isLessThanOrEqualTo(LEASE.toNanos() + LEASE.toNanos() / RoomLeases.TICKS);
		vts.advanceTime();
		StepVerifier.create(sender.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.LEASE_EXPIRED);
			assertThat(k.reason()).startsWith("lease on room 7 expired: no renewal from decode rank ")
					.contains("for over 3000 ms (lease 3000 ms; it renewed nothing since)");
		}).verify(T);
		// Decode hears why, over the connection that is still open, by the status's failure code: the lease expired,
		// not some failure of the peer.
		StepVerifier.create(receiver[0].completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.LEASE_EXPIRED);
			assertThat(k.isFromAnotherRank()).isTrue();
			assertThat(k.reason()).contains("lease on room 7 expired");
		}).verify(T);
		assertThat(decode.stats().failures().get(FailureCause.LEASE_EXPIRED)).isOne();
		assertThat(prefill.stats().connections()).isOne();
		assertThat(prefill.stats().failures().get(FailureCause.LEASE_EXPIRED)).isOne();
	}

	@Test
	void aRoomDecodeNoLongerRenewsFailsAloneSayingDecodeRenewsOthers() {
		start(p -> p.leasePeriod(LEASE));
		KVReceiver[] one = new KVReceiver[1];
		KVReceiver[] two = new KVReceiver[1];
		KVSender kept = waiting(1, one);
		KVSender forgotten = waiting(2, two);
		tap.renewOnly(room -> room != 2);
		vts.advanceTimeBy(LEASE.multipliedBy(2));
		assertThat(kept.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		StepVerifier.create(forgotten.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.LEASE_EXPIRED);
			assertThat(k.reason()).startsWith("lease on room 2 expired").contains("it renewed other rooms")
					.contains("so it no longer holds this one");
		}).verify(T);
	}

	@Test
	void aRoomNoSenderClaimedBeforeItsLeaseExpiredGivesTheEngineASenderBornFailedWithTheReason() {
		start(p -> p.leasePeriod(LEASE));
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 9);
		receiver.sendMetadata(new int[] { 9 }, -1, new int[0]);
		vts.advanceTime();
		assertThat(prefill.status(9)).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		tap.dropRenewals();
		vts.advanceTimeBy(LEASE.multipliedBy(2));
		assertThat(prefill.status(9)).as("ended").isNull();
		// The engine gets to the request only now: its sender is failed, so it frees the pages it took for the room.
		KVSender late = prefill.sender(9);
		StepVerifier.create(late.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.LEASE_EXPIRED);
			assertThat(k.reason()).startsWith("lease on room 9 expired: no renewal from decode rank ");
			assertThat(k.isFromAnotherRank()).isFalse();
		}).verify(T);
		StepVerifier.create(receiver.completion()).expectErrorSatisfies(e -> assertThat(((KVTransferException) e)
				.reason()).contains("lease on room 9 expired")).verify(T);
	}

	@Test
	void moreRoomsThanOneRenewalListsGoInSeveralRenewalsPerTick() {
		int rooms = KVMessage.Renew.MAX_ROOMS + 8;
		start(p -> p.leasePeriod(LEASE).unclaimedRooms(rooms, rooms), RankMemory.prefill(SHAPE, ParallelLayout.SINGLE,
				1, 0, 0), RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 1, 0, 0), rooms);
		for (int room = 0; room < rooms; room++) {
			decode.receiver(BOOTSTRAP, room).sendMetadata(new int[] { 0 }, -1, new int[0]);
		}
		vts.advanceTime();
		assertThat(prefill.stats().liveRooms().get(KVPoll.WAITING_FOR_INPUT)).isEqualTo(rooms);
		long before = tap.received();
		vts.advanceTimeBy(LEASE.dividedBy(3));
		assertThat(tap.received() - before).as("renewals in one tick").isEqualTo(2);
		assertThat(tap.roomsReceived()).isEqualTo(rooms);
		vts.advanceTimeBy(LEASE.multipliedBy(2));
		assertThat(prefill.stats().liveRooms().get(KVPoll.WAITING_FOR_INPUT)).as("every room kept").isEqualTo(rooms);
	}

	@Test
	void theLeasePeriodIsZeroOrOneSecondToAnHourAsTheHandshakeAcceptsAndARenewalListsAtMostMaxRooms() {
		assertThat(PrefillSpec.DEFAULT_LEASE_PERIOD).isEqualTo(Duration.ofSeconds(30));
		assertThat(KVManagerSpec.prefill().leasePeriod(Duration.ZERO)).isNotNull();
		assertThat(KVManagerSpec.prefill().leasePeriod(Duration.ofSeconds(1))).isNotNull();
		assertThat(KVManagerSpec.prefill().leasePeriod(Duration.ofHours(1))).isNotNull();
		assertThatThrownBy(() -> KVManagerSpec.prefill().leasePeriod(Duration.ofMillis(999)))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("leasePeriod : PT0.999S (expected: zero, or 1000..3600000 ms)");
		assertThatThrownBy(() -> KVManagerSpec.prefill().leasePeriod(Duration.ofHours(1).plusMillis(1)))
				.isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> KVManagerSpec.prefill().leasePeriod(Duration.ofSeconds(-1)))
				.isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> new KVMessage.Renew(new long[KVMessage.Renew.MAX_ROOMS + 1]))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("rooms : 8193 (expected: at most 8192)");
		// A prefill rank cannot announce a lease that would make decode renew many times a second, on any transport:
		// the acknowledgement itself refuses it (a codec reading one is a malformed frame).
		io.kvferry.spi.PeerLayout layout = io.kvferry.spi.PeerLayout.of(prefillMem.kvArgs(), ParallelLayout.SINGLE);
		for (long lease : new long[] { -1, 1, 999, 3_600_001 }) {
			assertThatThrownBy(() -> new KVMessage.HelloAck(layout, 0, 0, lease))
					.isInstanceOf(IllegalArgumentException.class)
					.hasMessage("leaseMillis : " + lease + " (expected: 0 for none, or 1000..3600000)");
		}
		assertThat(new KVMessage.HelloAck(layout, 0, 0, 1000).leaseMillis()).isEqualTo(1000);
		assertThat(new KVMessage.HelloAck(layout, 0, 0, 3_600_000).leaseMillis()).isEqualTo(3_600_000);
	}

	@Test
	void withoutLeasesNothingIsRenewedAndNothingExpires() {
		start(p -> p.leasePeriod(Duration.ZERO));
		KVSender sender = waiting(3, new KVReceiver[1]);
		vts.advanceTimeBy(Duration.ofSeconds(290));
		assertThat(sender.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		assertThat(tap.sent()).isZero();
	}
}
