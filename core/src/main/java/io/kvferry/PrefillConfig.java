package io.kvferry;

import java.time.Duration;
import java.util.List;

import org.jspecify.annotations.Nullable;

/** The read-only configuration of a prefill rank's manager, as {@link PrefillSpec} assembled it. */
public final class PrefillConfig extends KVManagerConfig {

	@Nullable HostPort bootstrapAddress;
	HostPort bindAddress = new HostPort("0.0.0.0", 0);
	@Nullable String advertiseHost;
	List<String> moreAdvertiseHosts = List.of();
	Duration reregisterInterval = KVManagerSpec.DEFAULT_REREGISTER_INTERVAL;
	boolean allCpRanksTransfer;
	boolean dsaCacheLayerSplit;
	int unclaimedRoomsPerPeer = PrefillSpec.DEFAULT_UNCLAIMED_PER_PEER;
	int unclaimedRooms = PrefillSpec.DEFAULT_UNCLAIMED;
	Duration unclaimedRoomTimeout = PrefillSpec.DEFAULT_UNCLAIMED_TIMEOUT;
	int optimisticRooms = PrefillSpec.DEFAULT_OPTIMISTIC_ROOMS;
	Duration optimisticWait = PrefillSpec.DEFAULT_OPTIMISTIC_WAIT;
	Duration leasePeriod = PrefillSpec.DEFAULT_LEASE_PERIOD;
	long firstStripeBytes = PrefillSpec.DEFAULT_FIRST_STRIPE_BYTES;

	/** The defaults. */
	PrefillConfig() {
	}

	private PrefillConfig(PrefillConfig from) {
		super(from);
		bootstrapAddress = from.bootstrapAddress;
		bindAddress = from.bindAddress;
		advertiseHost = from.advertiseHost;
		moreAdvertiseHosts = from.moreAdvertiseHosts;
		reregisterInterval = from.reregisterInterval;
		allCpRanksTransfer = from.allCpRanksTransfer;
		dsaCacheLayerSplit = from.dsaCacheLayerSplit;
		unclaimedRoomsPerPeer = from.unclaimedRoomsPerPeer;
		unclaimedRooms = from.unclaimedRooms;
		unclaimedRoomTimeout = from.unclaimedRoomTimeout;
		optimisticRooms = from.optimisticRooms;
		optimisticWait = from.optimisticWait;
		leasePeriod = from.leasePeriod;
		firstStripeBytes = from.firstStripeBytes;
	}

	@Override
	PrefillConfig copy() {
		return new PrefillConfig(this);
	}

	@Override
	public DisaggregationMode mode() {
		return DisaggregationMode.PREFILL;
	}

	/** @return where the rank registers (a started manager always has it) */
	public @Nullable HostPort bootstrapAddress() {
		return bootstrapAddress;
	}

	/** @return where the rank listens */
	public HostPort bindAddress() {
		return bindAddress;
	}

	/** @return the host decode ranks dial, or null for the bind host (or the detected address) */
	public @Nullable String advertiseHost() {
		return advertiseHost;
	}

	/**
	 * @return the addresses of the rank's further network interfaces, registered with the listening port after
	 *         {@link #advertiseHost}: decode deals a session's stripes over them all (none: one interface)
	 */
	public List<String> moreAdvertiseHosts() {
		return moreAdvertiseHosts;
	}

	/** @return how often the rank registers again (zero: never) */
	public Duration reregisterInterval() {
		return reregisterInterval;
	}

	/**
	 * @return with CP: whether every CP rank sends its share of a room's pages (else CP rank 0 sends all and the others
	 *         only take part)
	 */
	public boolean allCpRanksTransfer() {
		return allCpRanksTransfer;
	}

	/** @return with CP: whether KV layers are split across CP ranks, each sending its own layers */
	public boolean dsaCacheLayerSplit() {
		return dsaCacheLayerSplit;
	}

	/** @return rooms one decode rank may have asked for that no sender claimed yet */
	public int unclaimedRoomsPerPeer() {
		return unclaimedRoomsPerPeer;
	}

	/** @return such rooms from all decode ranks together */
	public int unclaimedRooms() {
		return unclaimedRooms;
	}

	/** @return how long a room asked for waits for its sender before it fails */
	public Duration unclaimedRoomTimeout() {
		return unclaimedRoomTimeout;
	}

	/** @return rooms whose sender may hold chunks sent before every decode rank asked */
	public int optimisticRooms() {
		return optimisticRooms;
	}

	/** @return how long such a room waits for decode's requests after its first early chunk */
	public Duration optimisticWait() {
		return optimisticWait;
	}

	/**
	 * @return how long the rank holds a room a decode rank asked for without that rank renewing the room's lease;
	 *         decode renews every third of it (zero: no leases)
	 */
	public Duration leasePeriod() {
		return leasePeriod;
	}

	/** @return how many of a room's first bytes to a striped decode rank go on stripe 0 alone */
	public long firstStripeBytes() {
		return firstStripeBytes;
	}
}
