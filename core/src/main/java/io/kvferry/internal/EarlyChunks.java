package io.kvferry.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/**
 * The chunks a prefill room holds because the engine sent them before every decode rank asked for the room
 * (optimistic prefill): their pages stay the engine's, so the rooms holding such chunks are bounded on the rank, and
 * each waits a bounded time after its first early chunk. Not thread-safe: kept under the room's monitor.
 */
final class EarlyChunks {

	private final List<PrefillChunk> held = new ArrayList<>(1);
	// The rank's rooms that hold early chunks now.
	private final AtomicInteger holding;
	private final int limit;
	private final Duration wait;
	private final Scheduler timer;
	private boolean counted;
	// Cancelled when the hold ends: a timer left to fire would keep the ended room and all it references reachable
	// until its timeout.
	private Disposable expiry;

	/**
	 * @param holding the rank's count of rooms that hold early chunks
	 * @param limit the most such rooms
	 * @param wait how long a room holds them after its first
	 * @param timer runs the wait
	 */
	EarlyChunks(AtomicInteger holding, int limit, Duration wait, Scheduler timer) {
		this.holding = holding;
		this.limit = limit;
		this.wait = wait;
		this.timer = timer;
	}

	/**
	 * Holds a chunk; the first one counts the room against the rank's bound and starts its wait.
	 *
	 * @param expired runs once the wait is over, unless the hold ended before
	 * @return false when the rank already has its bound of such rooms (nothing is held then)
	 */
	boolean hold(PrefillChunk chunk, Runnable expired) {
		if (!counted) {
			if (holding.incrementAndGet() > limit) {
				holding.decrementAndGet();
				return false;
			}
			counted = true;
			expiry = timer.schedule(expired, wait.toNanos(), TimeUnit.NANOSECONDS);
		}
		held.add(chunk);
		return true;
	}

	/** @return whether the room holds early chunks (its wait runs) */
	boolean isHolding() {
		return counted;
	}

	/**
	 * Ends the hold: every decode rank asked, or the room ended. The room no longer counts against the bound.
	 *
	 * @return the chunks held, in the order they came
	 */
	List<PrefillChunk> release() {
		if (counted) {
			counted = false;
			holding.decrementAndGet();
			expiry.dispose();
		}
		List<PrefillChunk> chunks = new ArrayList<>(held);
		held.clear();
		return chunks;
	}

	/** @return the rank's bound of rooms that hold early chunks */
	int limit() {
		return limit;
	}

	/** @return how long a room holds them after its first */
	Duration waitLimit() {
		return wait;
	}
}
