package io.kvferry.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;

import io.kvferry.harness.RoomResult;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * Runs a batch of rooms with at most {@code concurrency} in flight and at most {@code poolPages} pages held, in request
 * order, as a decode engine's scheduler admits requests only when it has room for their KV. A room's pages are given
 * back when it succeeds; a failed room's pages are given back too when the runner freed them before its result (a
 * decode process frees them once prefill can no longer write them), and otherwise stay held (an in-process cluster
 * keeps them fenced), so the budget mirrors the pool. Thread-safe: rooms complete on any thread.
 */
final class BatchRunner {

	/**
	 * The batch's outcome.
	 *
	 * @param results every room that ran, in completion order
	 * @param skipped requests never started (after a failure with stop-on-failure, or {@link #stop()}, or turned away
	 *        by the runner)
	 * @param elapsedNanos from the first start to the last completion
	 */
	record Outcome(List<RoomResult> results, int skipped, long elapsedNanos) {
	}

	private final List<Workload.Request> requests;
	private final int concurrency;
	private final long poolPages;
	private final boolean stopOnFailure;
	private final boolean failedRoomsFreed;
	private final Function<Workload.Request, Mono<RoomResult>> runner;
	private final Consumer<RoomResult> listener;
	private final Sinks.One<Outcome> done = Sinks.one();
	private final List<RoomResult> results = new ArrayList<>();

	// Guarded by this.
	private int next;
	private int inFlight;
	private int turnedAway;
	private long pagesHeld;
	private boolean stopped;
	private long start;

	/**
	 * @param requests the batch, started in this order; not copied, and not to be changed while the runner runs
	 * @param concurrency rooms in flight at most, at least 1
	 * @param poolPages pages held at most (a request larger than the pool still runs, alone)
	 * @param stopOnFailure start no new room once one failed
	 * @param runner runs one room; must not error (a failure is in the result); empty when it did not start the room
	 * @param listener told of every result, on the completing thread
	 */
	BatchRunner(List<Workload.Request> requests, int concurrency, long poolPages, boolean stopOnFailure,
			Function<Workload.Request, Mono<RoomResult>> runner, Consumer<RoomResult> listener) {
		this(requests, concurrency, poolPages, stopOnFailure, false, runner, listener);
	}

	/**
	 * @param failedRoomsFreed whether {@code runner} has freed a failed room's pages by the time it gives its result
	 *        (else they stay counted as held)
	 */
	BatchRunner(List<Workload.Request> requests, int concurrency, long poolPages, boolean stopOnFailure,
			boolean failedRoomsFreed, Function<Workload.Request, Mono<RoomResult>> runner,
			Consumer<RoomResult> listener) {
		if (concurrency < 1) {
			throw new IllegalArgumentException("concurrency : " + concurrency + " (expected: >= 1)");
		}
		// Not copied: a batch may make its requests as they are asked for (Workload does).
		this.requests = requests;
		this.concurrency = concurrency;
		this.poolPages = poolPages;
		this.stopOnFailure = stopOnFailure;
		this.failedRoomsFreed = failedRoomsFreed;
		this.runner = runner;
		this.listener = listener;
	}

	/** @return the outcome once every started room ended; lazy, run once */
	Mono<Outcome> run() {
		return Mono.defer(() -> {
			synchronized (this) {
				start = System.nanoTime();
			}
			pump();
			return done.asMono();
		});
	}

	/** Starts no new room; the outcome comes once the rooms in flight ended (their results included). */
	void stop() {
		synchronized (this) {
			stopped = true;
		}
		pump();
	}

	private void pump() {
		List<Workload.Request> launch = new ArrayList<>();
		Outcome finished = null;
		synchronized (this) {
			while (!stopped && next < requests.size() && inFlight < concurrency) {
				Workload.Request r = requests.get(next);
				// A request larger than the whole pool runs alone rather than never.
				if (inFlight > 0 && pagesHeld + r.pages() > poolPages) {
					break;
				}
				next++;
				inFlight++;
				pagesHeld += r.pages();
				launch.add(r);
			}
			if (inFlight == 0 && launch.isEmpty() && (stopped || next == requests.size())) {
				finished = new Outcome(List.copyOf(results), requests.size() - next + turnedAway,
						System.nanoTime() - start);
			}
		}
		if (finished != null) {
			done.tryEmitValue(finished);
			return;
		}
		for (Workload.Request r : launch) {
			// Each room starts on a worker: pattern fills then run in parallel, never on an event loop.
			runner.apply(r)
					.subscribeOn(Schedulers.parallel())
					.onErrorResume(e -> Mono.just(new RoomResult(r.room(), r.pages(), 0, 0, String.valueOf(e))))
					.map(Optional::of)
					.defaultIfEmpty(Optional.empty())
					.subscribe(result -> result.ifPresentOrElse(done -> complete(r, done), () -> turnedAway(r)));
		}
	}

	private void turnedAway(Workload.Request r) {
		synchronized (this) {
			inFlight--;
			pagesHeld -= r.pages();
			turnedAway++;
		}
		pump();
	}

	private void complete(Workload.Request r, RoomResult result) {
		synchronized (this) {
			inFlight--;
			results.add(result);
			if (result.ok() || failedRoomsFreed) {
				pagesHeld -= r.pages();
			}
			if (!result.ok() && stopOnFailure) {
				stopped = true;
			}
		}
		listener.accept(result);
		pump();
	}
}
