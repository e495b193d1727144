package io.kvferry.transport.netty.it;

import static io.kvferry.transport.netty.it.LiveRoom.range;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.harness.ModelShape;
import io.kvferry.transport.netty.NettyKVTransport;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Thousands of small rooms over two prefill ranks and one decode rank, while transfers run: half of them are aborted
 * from decode at random moments, some from one prefill rank. Every room must end; no byte of a decode-aborted room may
 * change once its abort was acknowledged; every other room that nobody aborted lands byte-exact. Each room has pages of
 * its own on both sides, so any late byte would show in its own checksum. These prefill ranks play by the rules (they
 * stop sending when aborted): the storm checks that aborts at any moment never leave a room hanging or mix rooms up.
 * Whether the fence holds against a rank that keeps writing is {@link AbortFenceIT}'s question.
 */
class AbortStormIT {

	private static final int ROOMS = 2000;
	private static final int CONCURRENCY = 200;
	private static final int MAX_PAGES = 3;
	/** 4 layers, 2 heads of 16 bf16, pages of 4 tokens: 256 B pages on decode, 128 B per prefill rank. */
	private static final ModelShape SHAPE = new ModelShape(4, 2, 16, 2, 4, false, 0, 64, 0);
	/**
	 * A prefill rank learns nothing of a room that decode aborted before it sent its destinations; that room then ends
	 * on prefill by its Bootstrapping timeout, as in SGLang.
	 */
	private static final Duration BOOTSTRAP_TIMEOUT = Duration.ofSeconds(6);
	/** Every room ends within this after it started. */
	private static final Duration ROOM_BOUND = BOOTSTRAP_TIMEOUT.plusSeconds(20);
	/** The whole storm. */
	private static final Duration STORM_BOUND = Duration.ofSeconds(80);

	private enum Plan {
		NORMAL, DECODE_ABORT, PREFILL_ABORT
	}

	/** What happened to one room. */
	private static final class Outcome {
		final LiveRoom room;
		final Plan plan;
		volatile Long ackedChecksum;
		volatile String abortError;
		volatile boolean ended;
		volatile String receiverFailure;
		// Whether a prefill abort found its sender still live (else it changed nothing).
		volatile boolean abortLanded;
		final List<String> senderFailures = new ArrayList<>();

		Outcome(LiveRoom room, Plan plan) {
			this.room = room;
			this.plan = plan;
		}
	}

	@Test
	void everyRoomEndsAbortedRoomsStayFencedAndTheOthersLandByteExact() {
		try (FaultRig rig = FaultRig.start(SHAPE, 2, 1, ROOMS * MAX_PAGES, ROOMS, NettyKVTransport.create(),
				spec -> spec.bootstrapTimeout(BOOTSTRAP_TIMEOUT))) {
			List<PrefillKVManager> prefill = rig.cluster.prefillManagers().get(0);
			DecodeKVManager decode = rig.cluster.decodeManagers().get(0);
			Map<Long, Outcome> outcomes = new ConcurrentHashMap<>();
			long start = System.nanoTime();
			Flux.range(0, ROOMS)
					.flatMap(i -> room(rig, prefill, decode, i, new Random(1000 + i), outcomes), CONCURRENCY)
					.then()
					.block(STORM_BOUND);
			Duration took = Duration.ofNanos(System.nanoTime() - start);

			assertThat(outcomes).hasSize(ROOMS);
			int decodeAborted = 0;
			int prefillAborted = 0;
			int notAborted = 0;
			int abortedAfterSuccess = 0;
			// Every broken promise of every room, so one run reports them all.
			List<String> problems = new ArrayList<>();
			for (Outcome o : outcomes.values()) {
				long id = o.room.id;
				String room = "room " + id + " (" + o.plan + "): ";
				if (!o.ended) {
					problems.add(room + "did not end within " + ROOM_BOUND);
				}
				switch (o.plan) {
					case DECODE_ABORT -> {
						decodeAborted++;
						if (o.abortError != null || o.ackedChecksum == null) {
							problems.add(room + "abort not acknowledged: " + o.abortError);
						}
						else if (o.room.checksum() != o.ackedChecksum) {
							problems.add(room + "bytes changed after the abort was acknowledged");
						}
						if (o.receiverFailure == null) {
							abortedAfterSuccess++;
							check(problems, room + "succeeded before its abort but ", o.room.verify());
						}
						else if (!o.receiverFailure.contains("storm abort")) {
							problems.add(room + "failed for another reason: " + o.receiverFailure);
						}
					}
					case PREFILL_ABORT -> {
						prefillAborted++;
						if (!o.abortLanded) {
							abortedAfterSuccess++;
						}
						else if (!String.join("; ", o.senderFailures).contains("storm prefill abort")) {
							problems.add(room + "the aborted sender did not fail with the abort: " + o.senderFailures);
						}
						if (o.receiverFailure == null) {
							check(problems, room + "a prefill rank aborted it, yet decode reported success and ",
									o.room.verify());
						}
					}
					default -> {
						notAborted++;
						if (o.receiverFailure != null || !o.senderFailures.isEmpty()) {
							problems.add(room + "failed: " + o.receiverFailure + " / " + o.senderFailures);
						}
						else {
							check(problems, room, o.room.verify());
						}
					}
				}
				if (decode.status(id) != null) {
					problems.add(room + "decode still knows it");
				}
				for (PrefillKVManager p : prefill) {
					if (p.status(id) != null) {
						problems.add(room + p + " still knows it");
					}
				}
			}
			System.out.printf("abort storm: %d rooms in %d ms: %d not aborted, %d aborted by decode, %d by prefill "
					+ "(%d aborts came after success), %d problems%n", ROOMS, took.toMillis(), notAborted,
					decodeAborted, prefillAborted, abortedAfterSuccess, problems.size());
			assertThat(problems).isEmpty();
			assertThat(decodeAborted).isBetween(ROOMS / 3, 2 * ROOMS / 3);
			assertThat(prefillAborted).isPositive();
			assertThat(took).isLessThan(STORM_BOUND);
		}
	}

	private static void check(List<String> problems, String room, String mismatch) {
		if (mismatch != null) {
			problems.add(room + "bytes differ: " + mismatch);
		}
	}

	/**
	 * One room: senders then receiver, the first chunk at once, the rest after a random pause, and for aborted rooms
	 * an abort after another random pause (or right away, or once bytes are flowing).
	 */
	private static Mono<Void> room(FaultRig rig, List<PrefillKVManager> prefill, DecodeKVManager decode, int i, Random random,
			Map<Long, Outcome> outcomes) {
		return Mono.defer(() -> {
			long id = 1 + i;
			int n = 1 + random.nextInt(MAX_PAGES);
			int[] pages = range(i * MAX_PAGES, i * MAX_PAGES + n);
			int draw = random.nextInt(100);
			Plan plan = draw < 50 ? Plan.DECODE_ABORT : draw < 60 ? Plan.PREFILL_ABORT : Plan.NORMAL;
			LiveRoom room = LiveRoom.open(rig.bootstrap(), id, prefill, rig.cluster.prefillMemory().get(0),
					List.of(decode), rig.cluster.decodeMemory(), pages, pages, i, i);
			Outcome outcome = new Outcome(room, plan);
			outcomes.put(id, outcome);
			int cut = n == 1 ? 1 : 1 + random.nextInt(n - 1);
			room.send(0, cut);
			Mono<Void> rest = cut == n ? Mono.empty()
					: Mono.delay(Duration.ofMillis(random.nextInt(4))).doOnNext(x -> room.send(cut, n)).then();
			Mono<Void> abort = abort(room, outcome, random);
			Mono<Void> ends = ends(room, outcome).timeout(ROOM_BOUND, Mono.empty());
			return Mono.when(rest, abort).then(ends);
		});
	}

	private static Mono<Void> abort(LiveRoom room, Outcome outcome, Random random) {
		if (outcome.plan == Plan.NORMAL) {
			return Mono.empty();
		}
		int moment = random.nextInt(4);
		Mono<?> when;
		if (moment == 0) {
			when = Mono.just(0);
		}
		else if (moment == 3) {
			// Once bytes are flowing (or the room already ended).
			KVReceiver receiver = room.receivers.get(0);
			when = receiver.states().filter(s -> s == KVPoll.TRANSFERRING || s.isTerminal()).next()
					.defaultIfEmpty(KVPoll.FAILED);
		}
		else {
			when = Mono.delay(Duration.ofMillis(random.nextInt(6)));
		}
		if (outcome.plan == Plan.PREFILL_ABORT) {
			KVSender sender = room.senders.get(random.nextInt(room.senders.size()));
			// A sender already successful stays so (terminal states latch): the abort then changed nothing.
			// The call aborts; the room's completion ends (errors, if it failed) once the abort was handed off.
			return when.then(Mono.defer(() -> {
				sender.abort("storm prefill abort");
				outcome.abortLanded = sender.poll() == KVPoll.FAILED;
				return sender.completion().onErrorResume(KVTransferException.class, e -> Mono.empty());
			}));
		}
		// Decode's completion of an aborted room errors only once its pages are released.
		return when.then(Mono.defer(() -> {
			KVReceiver receiver = room.receivers.get(0);
			receiver.abort("storm abort");
			return receiver.completion().onErrorResume(KVTransferException.class, e -> Mono.empty());
		}))
				.doOnSuccess(v -> outcome.ackedChecksum = room.checksum())
				.onErrorResume(e -> {
					outcome.abortError = e.toString();
					return Mono.empty();
				});
	}

	private static Mono<Void> ends(LiveRoom room, Outcome outcome) {
		List<Mono<Void>> all = new ArrayList<>();
		for (KVSender s : room.senders) {
			all.add(s.completion().onErrorResume(e -> {
				synchronized (outcome.senderFailures) {
					outcome.senderFailures.add(e.getMessage());
				}
				return Mono.empty();
			}));
		}
		all.add(room.receivers.get(0).completion().onErrorResume(e -> {
			outcome.receiverFailure = e.getMessage();
			return Mono.empty();
		}));
		return Mono.when(all).doOnSuccess(v -> outcome.ended = true);
	}
}
