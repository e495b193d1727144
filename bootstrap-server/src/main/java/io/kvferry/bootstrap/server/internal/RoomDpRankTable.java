package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Today's SGLang room → prefill DP rank table ({@code POST /register_dp_rank}, {@code POST /query_dp_ranks}). An
 * entry is answered for exactly {@code lifetime} after it was written (SGLang's periodic cleanup gives 1 to 2
 * intervals); {@link #sweep()} frees the memory of expired entries and is meant to run periodically.
 * <p>
 * Thread-safe and lock-free; no method blocks.
 */
public final class RoomDpRankTable {

	private record Entry(int dpRank, long writtenNanos) {
	}

	private final ConcurrentHashMap<Long, Entry> entries = new ConcurrentHashMap<>();
	private final long lifetimeNanos;
	private final LongSupplier nanoClock;

	/**
	 * @param lifetime how long an entry is answered, positive
	 * @param nanoClock a monotonic clock in nanoseconds ({@code System::nanoTime} outside tests)
	 */
	public RoomDpRankTable(Duration lifetime, LongSupplier nanoClock) {
		Objects.requireNonNull(lifetime, "lifetime");
		Objects.requireNonNull(nanoClock, "nanoClock");
		if (lifetime.isNegative() || lifetime.isZero()) {
			throw new IllegalArgumentException("lifetime : " + lifetime + " (expected: > 0)");
		}
		this.lifetimeNanos = lifetime.toNanos();
		this.nanoClock = nanoClock;
	}

	/**
	 * Records (or refreshes) a room's DP rank.
	 *
	 * @param room the bootstrap room
	 * @param dpRank the prefill DP rank serving it
	 */
	public void put(long room, int dpRank) {
		entries.put(room, new Entry(dpRank, nanoClock.getAsLong()));
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
		entries.values().removeIf(entry -> expired(entry, now));
		return entries.size();
	}

	/** @return how many entries are held, expired ones not yet swept included */
	public int size() {
		return entries.size();
	}

	private boolean expired(Entry entry, long now) {
		return now - entry.writtenNanos() >= lifetimeNanos;
	}
}
