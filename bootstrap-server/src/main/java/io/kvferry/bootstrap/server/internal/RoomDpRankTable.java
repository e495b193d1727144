package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Today's SGLang room → prefill DP rank table ({@code POST /register_dp_rank}, {@code POST /query_dp_ranks}). An
 * entry is answered for exactly {@code lifetime} after it was written (SGLang's periodic cleanup gives 1 to 2
 * intervals); {@link #sweep()} frees the memory of expired entries and is meant to run periodically.
 * <p>
 * The table holds at most {@code maxEntries} rooms, so that writes from anyone who can reach the port cannot grow it
 * without bound within an entry's lifetime: {@link #put} refuses a new room when the table is full, after one sweep of
 * expired entries (at most one such sweep per {@value #SWEEP_ON_FULL_INTERVAL_MILLIS} ms, since a sweep walks the whole
 * table). Rewriting a room already held is never refused, and held entries keep being answered.
 * <p>
 * Thread-safe and lock-free (a per-room atomic update and an atomic count, never above the cap); no method blocks.
 */
public final class RoomDpRankTable {

	/** Shortest time between two sweeps run by a write that found the table full. */
	static final long SWEEP_ON_FULL_INTERVAL_MILLIS = 1000;

	private record Entry(int dpRank, long writtenNanos) {
	}

	private final ConcurrentHashMap<Long, Entry> entries = new ConcurrentHashMap<>();
	/** Places for entries: one is taken before a new room goes in, so the table never holds more than the cap. */
	private final BoundedCount places;
	private final AtomicLong refused = new AtomicLong();
	private final Throttle sweepOnFull;
	private final long lifetimeNanos;
	private final LongSupplier nanoClock;

	/**
	 * @param lifetime how long an entry is answered, positive
	 * @param maxEntries most rooms held at once, at least 1
	 * @param nanoClock a monotonic clock in nanoseconds ({@code System::nanoTime} outside tests)
	 */
	public RoomDpRankTable(Duration lifetime, int maxEntries, LongSupplier nanoClock) {
		Objects.requireNonNull(lifetime, "lifetime");
		Objects.requireNonNull(nanoClock, "nanoClock");
		if (lifetime.isNegative() || lifetime.isZero()) {
			throw new IllegalArgumentException("lifetime : " + lifetime + " (expected: > 0)");
		}
		if (maxEntries < 1) {
			throw new IllegalArgumentException("maxDpRankEntries : " + maxEntries + " (expected: >= 1)");
		}
		this.lifetimeNanos = lifetime.toNanos();
		this.places = new BoundedCount(maxEntries);
		this.nanoClock = nanoClock;
		this.sweepOnFull = new Throttle(Duration.ofMillis(SWEEP_ON_FULL_INTERVAL_MILLIS), nanoClock);
	}

	/**
	 * Records (or refreshes) a room's DP rank, unless the room is new and the table full.
	 *
	 * @param room the bootstrap room
	 * @param dpRank the prefill DP rank serving it
	 * @return whether the entry is stored; {@code false} only for a new room while {@link #maxEntries()} are held
	 */
	public boolean put(long room, int dpRank) {
		Entry fresh = new Entry(dpRank, nanoClock.getAsLong());
		if (store(room, fresh) || (sweepOnFull.tryPass() && sweep() < places.cap() && store(room, fresh))) {
			return true;
		}
		refused.incrementAndGet();
		return false;
	}

	/**
	 * @param room a bootstrap room
	 * @return its DP rank, or {@code null} when unknown or expired
	 */
	public Integer get(long room) {
		Entry entry = entries.get(room);
		if (entry == null || expired(entry, nanoClock.getAsLong())) {
			return null;
		}
		return entry.dpRank();
	}

	/**
	 * Removes expired entries.
	 *
	 * @return how many entries remain
	 */
	public int sweep() {
		long now = nanoClock.getAsLong();
		// remove(key, value) fails when a write refreshed the entry meanwhile: the fresh entry stays, still counted.
		entries.forEach((room, entry) -> {
			if (expired(entry, now) && entries.remove(room, entry)) {
				places.release();
			}
		});
		return entries.size();
	}

	/** @return how many entries are held, expired ones not yet swept included; never more than {@link #maxEntries()} */
	public int size() {
		// The map itself, not the count: a place is reserved before its entry goes in and freed after it left.
		return entries.size();
	}

	/** @return most rooms held at once */
	public int maxEntries() {
		return places.cap();
	}

	/** @return how many writes {@link #put} refused so far because the table was full */
	public long refusedCount() {
		return refused.get();
	}

	/** @return how long an entry is answered */
	public Duration lifetime() {
		return Duration.ofNanos(lifetimeNanos);
	}

	private boolean store(long room, Entry fresh) {
		boolean[] stored = { true };
		entries.compute(room, (key, old) -> {
			if (old != null || places.tryTake()) {
				return fresh;
			}
			stored[0] = false;
			return null;
		});
		return stored[0];
	}

	private boolean expired(Entry entry, long now) {
		return now - entry.writtenNanos() >= lifetimeNanos;
	}
}
