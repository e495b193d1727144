package io.kvferry.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;

import io.kvferry.DecodeKVManager;
import io.kvferry.DecodeSpec;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVOverloadException;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.PrefillKVManager;
import io.kvferry.PrefillSpec;
import io.kvferry.RoomRequest;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * Overload as every transport must answer it: a room over a bound of rooms in flight (decode's, per prefill rank or
 * in all) or of rooms waiting for prefill's engine fails at once on both sides with a {@link KVOverloadException}
 * carrying a retry hint; the rooms under the bound move every byte; once they ended, new rooms are admitted again.
 * Decode's admission runs on a non-blocking Reactor thread, so that BlockHound (where installed) sees it never blocks.
 * A transport's tests start the managers and call each scenario.
 */
public final class OverloadScenarios {

	/** One layer of 16 heads, page size 2, no aux or state rows. */
	public static final ModelShape SHAPE = new ModelShape(1, 1, 16, 2, 4, false, 0, 0, 0);
	/** Pages of each side's pool. */
	public static final int PAGES = 16;

	private static final Duration T = Duration.ofSeconds(20);
	private static final int[] NONE = new int[0];

	private OverloadScenarios() {
	}

	/** A running prefill and decode manager on {@link #SHAPE}, with their memory. */
	public record Managers(PrefillKVManager prefill, DecodeKVManager decode, RankMemory prefillMemory,
			RankMemory decodeMemory, HostPort bootstrap, AutoCloseable closer) implements AutoCloseable {

		@Override
		public void close() throws Exception {
			closer.close();
		}
	}

	/** Starts a pair with the specs adjusted. */
	@FunctionalInterface
	public interface Starter {
		Managers start(UnaryOperator<PrefillSpec> prefill, UnaryOperator<DecodeSpec> decode);
	}

	/**
	 * Decode admits 4 rooms in flight with its prefill rank: the fifth fails at once (its receiver is returned failed)
	 * with a hint no longer than the configured one, and prefill's sender of it fails too, with the same hint; the four
	 * move every byte, and then a sixth is admitted and succeeds.
	 */
	public static void decodeBoundPerPrefillRank(Starter starter) throws Exception {
		try (Managers m = starter.start(p -> p, d -> d.maxRooms(4, 100).overloadRetryAfter(Duration.ofMillis(250)))) {
			// A room that succeeds first: the route is then known, and admission is decided inside receiver().
			transfer(m, List.of(opened(m, 100)));
			List<Room> held = new ArrayList<>();
			for (long room = 1; room <= 4; room++) {
				held.add(opened(m, room));
			}
			KVSender refusedSender = sender(m, 5);
			KVReceiver refused = admitOnNonBlockingThread(m, 5);
			assertThat(refused.poll()).as("refused within receiver(), not queued").isEqualTo(KVPoll.FAILED);
			Duration hint = overloaded(refused, false, "already has 4 rooms in flight with decode rank");
			assertThat(hint).isBetween(Duration.ofMillis(1), Duration.ofMillis(250));
			assertThat(overloaded(refusedSender, true, "refused room 5")).as("decode's hint, told to prefill")
					.isEqualTo(hint);
			transfer(m, held);
			// The four ended: their places are free again.
			transfer(m, List.of(opened(m, 6)));
		}
	}

	/**
	 * Decode admits 2 rooms in flight in all, before it even resolved the prefill instance: the third fails at once,
	 * prefill learns of it once resolved, and the two succeed; a fourth is admitted after them.
	 */
	public static void decodeBoundInAll(Starter starter) throws Exception {
		try (Managers m = starter.start(p -> p, d -> d.maxRooms(2, 2).overloadRetryAfter(Duration.ofMillis(400)))) {
			List<Room> held = List.of(opened(m, 1), opened(m, 2));
			KVSender refusedSender = sender(m, 3);
			KVReceiver refused = admitOnNonBlockingThread(m, 3);
			assertThat(refused.poll()).as("refused within receiver(), not queued").isEqualTo(KVPoll.FAILED);
			assertThat(overloaded(refused, false, "refused room 3: decode rank"))
					.as("no room succeeded yet: the configured hint").isEqualTo(Duration.ofMillis(400));
			assertThat(overloaded(refusedSender, true, "refused room 3")).isEqualTo(Duration.ofMillis(400));
			transfer(m, held);
			transfer(m, List.of(opened(m, 4)));
		}
	}

	/**
	 * Prefill holds 1 room its engine has not claimed: decode's second such room fails at once with prefill's hint, as
	 * does the sender the engine makes for it later; after the first is claimed and moved, rooms are admitted again.
	 */
	public static void prefillRefusalCarriesItsHint(Starter starter) throws Exception {
		try (Managers m = starter.start(p -> p.unclaimedRooms(1, 1).overloadRetryAfter(Duration.ofMillis(300)),
				d -> d)) {
			// Held once prefill publishes its request (decode's own state says nothing of when the request arrived).
			Mono<RoomRequest> held = m.prefill().roomRequests().filter(r -> r.room() == 1).next().cache();
			held.subscribe();
			KVReceiver first = receiver(m, 1);
			StepVerifier.create(held).expectNextCount(1).verifyComplete();
			KVReceiver refused = receiver(m, 2);
			assertThat(overloaded(refused, true, "room 2 refused: this decode rank already has 1 rooms waiting"))
					.isEqualTo(Duration.ofMillis(300));
			assertThat(overloaded(m.prefill().sender(2), false, "room 2 refused")).isEqualTo(Duration.ofMillis(300));
			KVSender claimed = m.prefill().sender(1);
			claimed.init(1, -1);
			transfer(m, List.of(new Room(1, claimed, first)));
			transfer(m, List.of(opened(m, 3)));
		}
	}

	/** A room both sides opened: the sender was made first, as an engine that got the request does. */
	public record Room(long id, KVSender sender, KVReceiver receiver) {
	}

	private static int page(long room) {
		return (int) (room % PAGES);
	}

	private static KVSender sender(Managers m, long room) {
		KVSender s = m.prefill().sender(room);
		s.init(1, -1);
		return s;
	}

	private static KVReceiver receiver(Managers m, long room) {
		KVReceiver r = m.decode().receiver(m.bootstrap(), room);
		r.sendMetadata(new int[] { page(room) }, -1, NONE);
		return r;
	}

	private static Room opened(Managers m, long room) {
		KVSender s = sender(m, room);
		KVReceiver r = admitOnNonBlockingThread(m, room);
		assertThat(r.poll()).as("room %d admitted", room).isNotEqualTo(KVPoll.FAILED);
		return new Room(room, s, r);
	}

	/** Opens the receiver on a thread Reactor marks non-blocking: under BlockHound any blocking call there fails. */
	private static KVReceiver admitOnNonBlockingThread(Managers m, long room) {
		return Objects.requireNonNull(Mono.fromCallable(() -> receiver(m, room)).subscribeOn(Schedulers.parallel()).block(T),
				"receiver");
	}

	/** Sends each room's page and checks both sides succeed and every byte landed. */
	private static void transfer(Managers m, List<Room> rooms) {
		for (Room r : rooms) {
			StepVerifier.create(r.sender.states().filter(s -> s == KVPoll.WAITING_FOR_INPUT).next())
					.expectNextCount(1).verifyComplete();
			m.prefillMemory().fill(r.id, new int[] { page(r.id) }, -1, NONE);
			r.sender.send(new int[] { page(r.id) }, NONE);
		}
		for (Room r : rooms) {
			StepVerifier.create(Mono.when(r.sender.completion(), r.receiver.completion())).verifyComplete();
			assertThat(m.decodeMemory().verify(r.id, new int[] { page(r.id) }, -1, NONE)).isNull();
		}
	}

	private static Duration overloaded(KVSender s, boolean fromDecode, String reasonPart) {
		return overloaded(s.completion(), fromDecode, reasonPart);
	}

	private static Duration overloaded(KVReceiver r, boolean fromPrefill, String reasonPart) {
		return overloaded(r.completion(), fromPrefill, reasonPart);
	}

	private static Duration overloaded(Mono<Void> completion, boolean remote, String reasonPart) {
		Duration[] hint = new Duration[1];
		StepVerifier.create(completion).expectErrorSatisfies(e -> {
			assertThat(e).isInstanceOf(KVOverloadException.class);
			KVOverloadException o = (KVOverloadException) e;
			assertThat(o.failureCause()).isEqualTo(FailureCause.OVERLOAD);
			assertThat(o.reason()).contains(reasonPart);
			assertThat(o.isFromAnotherRank()).as("from the other side: %s", o.reason()).isEqualTo(remote);
			hint[0] = o.retryAfter();
		}).verify(T);
		return hint[0];
	}
}
