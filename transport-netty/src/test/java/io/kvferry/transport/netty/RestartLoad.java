package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The two sides of {@link PeerRestartProcessTest}'s load, shared by the test's JVM and {@link RestartPeerMain}: a
 * prefill engine that serves every room it is asked for, and a decode engine that keeps a few rooms in flight and
 * checks every byte of each room that succeeded. Each in-flight room holds a slot of pages of its own on both sides.
 */
final class RestartLoad {

	static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 0, 0);
	static final int PAGES_PER_ROOM = 4;
	static final int SLOTS = 32;
	static final int CONCURRENCY = 4;
	/** A room that failed at once (nobody listens while the peer restarts) does not make its worker spin. */
	private static final Duration PACE = Duration.ofMillis(20);

	/**
	 * How a room ended on decode.
	 *
	 * @param room the room
	 * @param startNanos when decode asked for it ({@link System#nanoTime()})
	 * @param endNanos when it ended
	 * @param cause null when it succeeded and every byte matched
	 * @param reason why it failed, or empty
	 */
	record Outcome(long room, long startNanos, long endNanos, FailureCause cause, String reason) {

		boolean ok() {
			return cause == null;
		}

		/** One line of a child's output. */
		String line() {
			return ok() ? "ok " + room : "failed " + room + " " + cause + " " + reason.replace('\n', ' ');
		}
	}

	private RestartLoad() {
	}

	static RankMemory prefillMemory() {
		return RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, (long) SLOTS * PAGES_PER_ROOM, 0, 0);
	}

	static RankMemory decodeMemory() {
		return RankMemory.decode(SHAPE, ParallelLayout.SINGLE, (long) SLOTS * PAGES_PER_ROOM, 0, 0);
	}

	static NettyKVTransport transport(Duration heartbeat) {
		return NettyKVTransport.create().eventLoopThreads(1).heartbeatInterval(heartbeat);
	}

	private static Queue<Integer> slots() {
		Queue<Integer> free = new ConcurrentLinkedQueue<>();
		for (int i = 0; i < SLOTS; i++) {
			free.add(i);
		}
		return free;
	}

	private static int[] pages(int slot, int count) {
		int[] pages = new int[count];
		for (int i = 0; i < count; i++) {
			pages[i] = slot * PAGES_PER_ROOM + i;
		}
		return pages;
	}

	/** Serves every room prefill is asked for from a free slot, filled with the room's pattern. */
	static Disposable serve(PrefillKVManager prefill, RankMemory memory) {
		Queue<Integer> free = slots();
		return prefill.roomRequests().subscribe(req -> {
			Integer slot = free.poll();
			KVSender sender = prefill.sender(req.room());
			if (slot == null) {
				sender.abort("no free slot for room " + req.room());
				return;
			}
			int[] pages = pages(slot, Math.min(req.pageCount(), PAGES_PER_ROOM));
			memory.fill(req.room(), pages, -1, new int[0]);
			sender.completion().doFinally(s -> free.add(slot)).subscribe(null, e -> {
			});
			sender.init(pages.length, -1);
			sender.send(pages, new int[0]);
		});
	}

	/**
	 * Keeps {@link #CONCURRENCY} rooms in flight until disposed, rooms numbered from {@code firstRoom} on.
	 *
	 * @return every room's outcome, hot once subscribed
	 */
	static Flux<Outcome> decode(DecodeKVManager decode, RankMemory memory, HostPort bootstrap, long firstRoom) {
		Queue<Integer> free = slots();
		AtomicLong next = new AtomicLong(firstRoom);
		return Flux.range(0, CONCURRENCY)
				.flatMap(w -> Mono.defer(() -> {
					long room = next.getAndIncrement();
					// A call that throws is an outcome too, named, rather than the end of the whole load.
					return room(decode, memory, bootstrap, room, free).onErrorResume(e -> Mono.just(new Outcome(room,
							System.nanoTime(), System.nanoTime(), FailureCause.OTHER, "threw: " + e)));
				}).repeat(), CONCURRENCY);
	}

	private static Mono<Outcome> room(DecodeKVManager decode, RankMemory memory, HostPort bootstrap, long room,
			Queue<Integer> free) {
		Integer slot = free.poll();
		if (slot == null) {
			return Mono.error(new IllegalStateException("no free decode slot: more rooms in flight than slots"));
		}
		int[] pages = pages(slot, PAGES_PER_ROOM);
		long start = System.nanoTime();
		KVReceiver receiver = decode.receiver(bootstrap, room);
		receiver.sendMetadata(pages, -1, new int[0]);
		return receiver.completion()
				.then(Mono.fromCallable(() -> {
					String bad = memory.verify(room, pages, -1, new int[0]);
					return bad == null ? new Outcome(room, start, System.nanoTime(), null, "")
							: new Outcome(room, start, System.nanoTime(), FailureCause.OTHER, "bytes differ: " + bad);
				}))
				.onErrorResume(e -> {
					Outcome failed = e instanceof KVTransferException k
							? new Outcome(room, start, System.nanoTime(), k.failureCause(), k.reason())
							: new Outcome(room, start, System.nanoTime(), FailureCause.OTHER, String.valueOf(e));
					return Mono.just(failed).delayElement(PACE);
				})
				.doFinally(s -> free.add(slot));
	}
}
