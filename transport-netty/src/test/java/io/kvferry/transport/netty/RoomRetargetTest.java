package io.kvferry.transport.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

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
import io.kvferry.RoomClaim;
import io.kvferry.RoomHandoff;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.test.StepVerifier;

/**
 * Re-targeting a room over real TCP on loopback (port 0): a replacement decode that the request's owner handed the room
 * takes it over from a decode that died mid-transfer and gets every byte; a decode that was not handed the room (no
 * claim, a forged proof, a proof already used, the first decode's own claim) is refused while the room goes on; the
 * old decode is fenced, so the room is never served to two decodes at once; and a claim after the lease ran out, or
 * after the room ended, fails at once as {@code LEASE_EXPIRED} with no byte sent.
 */
@Timeout(120)
class RoomRetargetTest {

	/** 4 layers, 8 KV heads of 128 bf16, 16 tokens a page: 256 KiB a page over the 8 buffers. */
	private static final ModelShape SHAPE = new ModelShape(4, 8, 128, 2, 16, false, 0, 0, 0);
	/** Pages of a large room: 16 MiB, more than a stripe's window, so that pieces wait in the flow. */
	private static final int LARGE = 64;
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	private static final Duration LEASE = Duration.ofSeconds(1);
	private static final Duration T = Duration.ofSeconds(30);
	private static final int[] SRC = { 0, 1, 2, 3 };

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final List<Decode> decodes = new ArrayList<>();
	private RankMemory prefillMem;
	private NettyKVTransport prefillTransport;
	private PrefillKVManager prefill;

	/** One decode instance: its own transport, manager and memory, as a process of its own would have. */
	private record Decode(NettyKVTransport transport, DecodeKVManager manager, RankMemory memory) {

		/** Its connections close as a killed process's do: the kernel closes them, nothing is said first. */
		void die() {
			transport.disposeNow(T);
		}
	}

	@BeforeEach
	void start() {
		prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, LARGE, 0, 0);
		prefillTransport = NettyKVTransport.create().eventLoopThreads(1);
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(prefillTransport)
				.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.leasePeriod(LEASE).startNow();
	}

	@AfterEach
	void stop() {
		for (Decode d : decodes) {
			d.manager.disposeNow(T);
			d.transport.disposeNow(T);
		}
		prefill.disposeNow(T);
		prefillTransport.disposeNow(T);
	}

	private Decode decode() {
		RankMemory memory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 2 * LARGE, 0, 0);
		NettyKVTransport transport = NettyKVTransport.create().eventLoopThreads(1);
		DecodeKVManager manager = KVManagerSpec.decode().kvArgs(memory.kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).stripes(2).startNow();
		Decode d = new Decode(transport, manager, memory);
		decodes.add(d);
		return d;
	}

	private static KVReceiver ask(Decode d, long room, RoomClaim claim, int[] pages) {
		KVReceiver r = d.manager.receiver(BOOTSTRAP, room);
		r.claim(claim);
		r.sendMetadata(pages, -1, new int[0]);
		return r;
	}

	/** @return the engine's sender of the room, once decode asked for it, with its pages filled */
	private KVSender claimed(long room) {
		return claimed(room, SRC);
	}

	private KVSender claimed(long room, int[] src) {
		prefill.roomRequests().filter(q -> q.room() == room).next().block(T);
		prefillMem.fill(room, src, -1, new int[0]);
		KVSender s = prefill.sender(room);
		s.init(src.length, -1);
		return s;
	}

	private static int[] pages(int from, int count) {
		int[] p = new int[count];
		java.util.Arrays.setAll(p, i -> from + i);
		return p;
	}

	private static KVTransferException failure(KVReceiver r) {
		try {
			r.completion().block(T);
		}
		catch (KVTransferException e) {
			return e;
		}
		throw new AssertionError("room " + r.room() + " succeeded");
	}

	@Test
	void aReplacementTakesOverARoomWhoseDecodeDiedMidTransferAndGetsEveryByte() {
		long room = 7;
		RoomHandoff owner = RoomHandoff.create();
		Decode a = decode();
		int[] src = pages(0, LARGE);
		KVReceiver first = ask(a, room, owner.first(), pages(0, LARGE));
		KVSender sender = claimed(room, src);
		sender.send(pages(0, LARGE / 2), new int[0]);
		first.states().filter(s -> s == KVPoll.TRANSFERRING).next().block(T);
		a.die();
		// The engine goes on, maybe before prefill noticed: the pages it sends wait for the decode its owner hands
		// the room to.
		sender.send(pages(LARGE / 2, LARGE / 2), new int[0]);
		failure(first);
		assertThat(sender.poll()).isNotEqualTo(KVPoll.FAILED);

		Decode b = decode();
		long claimedAt = System.nanoTime();
		int[] pagesOnB = pages(LARGE, LARGE);
		KVReceiver second = ask(b, room, owner.handOff(), pagesOnB);
		StepVerifier.create(second.completion()).expectComplete().verify(T);
		long took = System.nanoTime() - claimedAt;
		StepVerifier.create(sender.completion()).expectComplete().verify(T);
		assertThat(b.memory.verify(room, pagesOnB, -1, new int[0])).isNull();
		System.out.printf(Locale.ROOT, "room %d re-targeted to a new decode in %.1f ms (claim to Success, %d KiB "
				+ "replayed)%n", room, took / 1e6, b.memory.kvBytes(LARGE) / 1024);
	}

	@Test
	void aDecodeThatWasNotHandedTheRoomIsRefusedAndTheOldDecodeIsFencedWhenItIs() {
		long room = 8;
		RoomHandoff owner = RoomHandoff.create();
		RoomClaim firstClaim = owner.first();
		Decode a = decode();
		KVReceiver first = ask(a, room, firstClaim, new int[] { 0, 1, 2, 3 });
		KVSender sender = claimed(room);
		sender.send(new int[] { 0 }, new int[0]);
		first.states().filter(s -> s == KVPoll.TRANSFERRING).next().block(T);

		// A second decode while the first holds it, without a claim, with the first decode's claim, with a forged
		// proof: each refused PROTOCOL, and the room goes on.
		byte[] forged = new byte[RoomClaim.BYTES];
		new SecureRandom().nextBytes(forged);
		List<RoomClaim> notHanded = List.of(RoomClaim.NONE, firstClaim, new RoomClaim(forged, firstClaim.handoff()));
		for (RoomClaim claim : notHanded) {
			assertRefused(room, claim);
		}
		assertThat(first.poll()).isEqualTo(KVPoll.TRANSFERRING);

		// The decode the owner hands the room to takes it: the first is told, and gets no byte more.
		Decode b = decode();
		RoomClaim handed = owner.handOff();
		int[] pagesOnB = { 3, 2, 1, 0 };
		KVReceiver second = ask(b, room, handed, pagesOnB);
		KVTransferException fenced = failure(first);
		assertThat(fenced.failureCause()).isEqualTo(FailureCause.ABORTED);
		assertThat(fenced.reason()).contains("re-targeted to decode");
		// The proof just used takes nothing again: the hand-off moved on with it.
		assertRefused(room, handed);
		sender.send(new int[] { 1, 2, 3 }, new int[0]);
		StepVerifier.create(second.completion()).expectComplete().verify(T);
		assertThat(b.memory.verify(room, pagesOnB, -1, new int[0])).isNull();
		assertThat(a.memory.isZero(new int[] { 1, 2, 3 })).isTrue();
	}

	/** A decode that presents {@code claim} for the room is refused, and no byte reaches its pages. */
	private void assertRefused(long room, RoomClaim claim) {
		Decode c = decode();
		int[] pages = { 0, 1, 2, 3 };
		KVTransferException e = failure(ask(c, room, claim, pages));
		assertThat(e.failureCause()).as(e.reason()).isEqualTo(FailureCause.PROTOCOL);
		assertThat(e.reason()).contains("room " + room);
		assertThat(c.memory.isZero(pages)).isTrue();
	}

	@Test
	void aClaimAfterTheLeaseRanOutFailsAtOnceAsLeaseExpiredWithNoByte() {
		long room = 9;
		RoomHandoff owner = RoomHandoff.create();
		Held held = hold(room, owner);
		held.sender.send(new int[] { 0, 1 }, new int[0]);
		held.receiver.states().filter(s -> s == KVPoll.TRANSFERRING).next().block(T);
		held.decode.die();
		StepVerifier.create(held.sender.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException k = (KVTransferException) e;
					assertThat(k.failureCause()).as(k.reason()).isEqualTo(FailureCause.LEASE_EXPIRED);
					assertThat(k.reason()).contains("no replacement decode claimed the room");
				})
				.verify(T);
		assertTooLate(room, owner);
	}

	@Test
	void aClaimAfterTheRoomSucceededFailsAtOnceAsLeaseExpired() {
		long room = 10;
		RoomHandoff owner = RoomHandoff.create();
		Held held = hold(room, owner);
		held.sender.send(SRC, new int[0]);
		StepVerifier.create(held.receiver.completion()).expectComplete().verify(T);
		StepVerifier.create(held.sender.completion()).expectComplete().verify(T);
		assertTooLate(room, owner);
	}

	/** The first decode's room, asked with the owner's first claim, and the engine's sender of it. */
	private record Held(Decode decode, KVReceiver receiver, KVSender sender) {
	}

	private Held hold(long room, RoomHandoff owner) {
		Decode a = decode();
		KVReceiver first = ask(a, room, owner.first(), new int[] { 0, 1, 2, 3 });
		return new Held(a, first, claimed(room));
	}

	/** A replacement the owner hands the room to after prefill let its pages go fails at once, typed, with no byte. */
	private void assertTooLate(long room, RoomHandoff owner) {
		Decode b = decode();
		int[] pagesOnB = { 4, 5, 6, 7 };
		long asked = System.nanoTime();
		KVTransferException late = failure(ask(b, room, owner.handOff(), pagesOnB));
		assertThat(late.failureCause()).as(late.reason()).isEqualTo(FailureCause.LEASE_EXPIRED);
		assertThat(late.reason()).contains("its pages are no longer held, so the replacement recomputes it");
		assertThat(System.nanoTime() - asked).isLessThan(T.toNanos() / 3);
		assertThat(b.memory.isZero(pagesOnB)).isTrue();
	}
}
