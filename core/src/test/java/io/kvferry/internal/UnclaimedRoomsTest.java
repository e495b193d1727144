package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.RoomRequest;
import io.kvferry.harness.ModelShape;
import io.kvferry.test.InMemoryPair;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

/**
 * A decode peer cannot make prefill hold unbounded memory for rooms its engine never claims: rooms waiting for their
 * sender are bounded per peer and in all, an over-bound request fails at once and decode reports it as overload, and
 * a room nobody claims fails after a short timeout.
 */
class UnclaimedRoomsTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(1, 1, 16, 2, 4, false, 0, 0, 0);

	private static final HostPort BOOTSTRAP = InMemoryPair.BOOTSTRAP;

	private InMemoryPair pair;
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@AfterEach
	void close() {
		if (pair != null) {
			pair.close();
		}
	}

	private void start(UnaryOperator<PrefillSpec> prefillSpec, UnaryOperator<DecodeSpec> decodeSpec) {
		pair = InMemoryPair.start(SHAPE, 16, prefillSpec, decodeSpec);
		prefill = pair.prefill;
		decode = pair.decode;
	}

	private KVReceiver ask(long room) {
		KVReceiver r = decode.receiver(BOOTSTRAP, room);
		r.sendMetadata(new int[] { (int) room % 16 }, -1, new int[0]);
		return r;
	}

	private static void waits(KVReceiver r) {
		StepVerifier.create(r.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).next()).expectNextCount(1)
				.expectComplete().verify(T);
	}

	/**
	 * @return the rooms whose requests prefill holds, as they come, replayed to each subscriber: a request reaches the
	 *         engine only once it was counted. Decode's own state does not say so: its room waits for input as soon as
	 *         its prefill rank is connected, before it sends the request, and a room asked later may send first.
	 */
	private Flux<Long> heldRooms() {
		return prefill.roomRequests().map(RoomRequest::room).replay().autoConnect(0);
	}

	@Test
	void aRequestOverTheBoundFailsAtOnceAsOverloadAndAClaimMakesRoom() {
		start(p -> p.unclaimedRooms(2, 2), d -> d);
		Flux<Long> held = heldRooms();
		KVReceiver a = ask(1);
		KVReceiver b = ask(2);
		StepVerifier.create(held.take(2).collectList())
				.assertNext(rooms -> assertThat(rooms).containsExactlyInAnyOrder(1L, 2L))
				.expectComplete()
				.verify(T);
		KVReceiver c = ask(3);
		StepVerifier.create(c.completion()).expectErrorSatisfies(e -> {
			KVTransferException k = (KVTransferException) e;
			assertThat(k.failureCause()).isEqualTo(FailureCause.OVERLOAD);
			assertThat(k.reason()).contains("room 3 refused: this decode rank already has 2 rooms waiting for their "
					+ "prefill sender");
		}).verify(T);
		// The engine that later makes room 3's sender gets it failed with the reason, not an exception.
		StepVerifier.create(prefill.sender(3).completion()).expectErrorSatisfies(e -> assertThat(
				((KVTransferException) e).reason()).contains("room 3 refused: this decode rank already has 2 rooms"))
				.verify(T);
		// The engine claims room 1: its place is free again.
		prefill.sender(1);
		ask(4);
		StepVerifier.create(held.skip(2).next()).expectNext(4L).expectComplete().verify(T);
		assertThat(a.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
		assertThat(b.poll()).isEqualTo(KVPoll.WAITING_FOR_INPUT);
	}

	@Test
	void aRoomNoSenderClaimsFailsAfterTheUnclaimedTimeoutAndFreesItsPlace() {
		start(p -> p.unclaimedRooms(1, 1).unclaimedRoomTimeout(Duration.ofMillis(200)), d -> d);
		KVReceiver a = ask(1);
		StepVerifier.create(a.completion()).expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
				.contains("no sender claimed room 1 within 200 ms of decode's request")).verify(T);
		KVReceiver b = ask(2);
		waits(b);
	}

	@Test
	void theHeldRequestBytesAreBoundedTooAndReleasedWithTheirRoom() {
		UnclaimedRooms u = new UnclaimedRooms(4, 8);
		java.util.concurrent.atomic.AtomicInteger peer = new java.util.concurrent.atomic.AtomicInteger();
		assertThat(u.admit(peer, true, UnclaimedRooms.MAX_BYTES - 10)).isNull();
		assertThat(u.admit(peer, true, 11)).isEqualTo("the requests of rooms waiting for their prefill sender already "
				+ "hold 64 MiB on this rank");
		assertThat(peer.get()).as("nothing counted for the refused request").isEqualTo(1);
		assertThat(u.rooms()).isEqualTo(1);
		assertThat(u.admit(peer, false, 10)).as("a second request of the waiting room, within the bound").isNull();
		u.release(peer, UnclaimedRooms.MAX_BYTES);
		assertThat(u.bytes()).isZero();
		assertThat(u.rooms()).isZero();
		assertThat(peer.get()).isZero();
	}

	@Test
	void theManagerWideBoundHoldsAcrossPeers() {
		UnclaimedRooms u = new UnclaimedRooms(2, 3);
		java.util.concurrent.atomic.AtomicInteger a = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicInteger b = new java.util.concurrent.atomic.AtomicInteger();
		assertThat(u.admit(a, true, 1)).isNull();
		assertThat(u.admit(a, true, 1)).isNull();
		assertThat(u.admit(b, true, 1)).isNull();
		assertThat(u.admit(b, true, 1)).isEqualTo("3 rooms already wait for their prefill sender on this rank");
		assertThat(b.get()).isEqualTo(1);
		assertThat(u.bytes()).isEqualTo(3);
		assertThat(UnclaimedRooms.bytesOf(new io.kvferry.spi.KVMessage.TransferRequest(1, new int[10], -1,
				new int[3], 1, false, "", 0, new int[] { 1, 2 }))).isEqualTo(64 + 4 * 15);
	}

	@Test
	void boundsAreChecked() {
		org.assertj.core.api.Assertions.assertThatThrownBy(() -> KVManagerSpec.prefill().unclaimedRooms(4, 2))
				.hasMessage("unclaimedRooms : 4 per peer, 2 in all (expected: 1 <= perPeer <= total)");
	}
}
