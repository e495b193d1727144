package io.kvferry.internal;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

import io.kvferry.DisaggregationMode;
import io.kvferry.PrefillConfig;
import io.kvferry.RoomRequest;
import io.kvferry.RoomTrace;
import io.kvferry.spi.PeerLayout;

/**
 * What every session, room and destination of a prefill rank needs of its manager, in one object handed to each of
 * them once: the configuration, the rank's name, layout and incarnation, its counters, and the rank-wide bounds and
 * streams that rooms share. The manager keeps what is its own (listening, registering, admitting, draining, closing);
 * nothing here calls back into it.
 */
final class PrefillSupport {

	final PrefillConfig config;
	final String name;
	// This rank's layout as decode ranks see it in the handshake.
	final PeerLayout ownLayout;
	final long incarnation;
	final int uniqueRank;
	// A CP rank decode never asks (only CP rank 0 transfers): its senders end on the last chunk, moving nothing.
	final boolean cpDummy;
	final LongAdder bytesSent;
	final LongAdder pagesSent;
	// The rooms decode ranks asked for, for the engine.
	final HotStream<RoomRequest> requests;
	final UnclaimedRooms unclaimed;
	// Rooms whose sender holds chunks the engine sent before every decode rank asked for them.
	final AtomicInteger optimistic = new AtomicInteger();
	// The hint this rank's overload refusals carry.
	final RetryAfter retryAfter;
	// Counts the lease ticks; null without leases.
	private final RoomLeases.Sweeper leases;
	// The leases of rooms whose decode rank went and that wait for a replacement decode to claim them.
	final RoomLeases<Room> orphans;
	// The tracing integration, deferred to the callback scheduler; null without tracing.
	private final DeferredRoomTracer tracing;

	PrefillSupport(PrefillConfig config, String name, PeerLayout ownLayout, long incarnation, int uniqueRank,
			boolean cpDummy, LongAdder bytesSent, LongAdder pagesSent, HotStream<RoomRequest> requests,
			RoomLeases.Sweeper leases, DeferredRoomTracer tracing) {
		this.config = config;
		this.name = name;
		this.ownLayout = ownLayout;
		this.incarnation = incarnation;
		this.uniqueRank = uniqueRank;
		this.cpDummy = cpDummy;
		this.bytesSent = bytesSent;
		this.pagesSent = pagesSent;
		this.requests = requests;
		this.unclaimed = new UnclaimedRooms(config.unclaimedRoomsPerPeer(), config.unclaimedRooms());
		this.retryAfter = new RetryAfter(config.overloadRetryAfter());
		this.leases = leases;
		this.orphans = new RoomLeases<>(leaseTicks());
		this.tracing = tracing;
	}

	/** @return whether rooms are held on leases that decode ranks renew */
	boolean leasing() {
		return leases != null;
	}

	/** @return the lease ticks so far (always 0 without leases) */
	LongSupplier leaseTicks() {
		return leases != null ? leases : () -> 0;
	}

	/** @return the milliseconds {@code ticks} lease ticks take at least */
	long leaseMillis(long ticks) {
		return leases != null ? leases.millis(ticks) : 0;
	}

	/**
	 * Opens a prefill room's trace on the callback scheduler: any thread, any lock held.
	 *
	 * @return {@link RoomTrace#NONE} without tracing
	 */
	RoomTrace traceLater(long room, String parentContext, long startEpochNanos) {
		return tracing == null ? RoomTrace.NONE
				: tracing.startLater(DisaggregationMode.PREFILL, name, room, parentContext, startEpochNanos);
	}
}
