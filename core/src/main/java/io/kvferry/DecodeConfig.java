package io.kvferry;

import java.time.Duration;

/** The read-only configuration of a decode rank's manager, as {@link DecodeSpec} assembled it. */
public final class DecodeConfig extends KVManagerConfig {

	boolean checksums;
	int stripes = DecodeSpec.DEFAULT_STRIPES;
	int maxRoomsPerPeer = DecodeSpec.DEFAULT_MAX_ROOMS_PER_PEER;
	int maxRooms = DecodeSpec.DEFAULT_MAX_ROOMS;
	int breakerFailures = DecodeSpec.DEFAULT_BREAKER_FAILURES;
	Duration breakerProbeInterval = DecodeSpec.DEFAULT_BREAKER_PROBE_INTERVAL;

	/** The defaults. */
	DecodeConfig() {
	}

	private DecodeConfig(DecodeConfig from) {
		super(from);
		checksums = from.checksums;
		stripes = from.stripes;
		maxRoomsPerPeer = from.maxRoomsPerPeer;
		maxRooms = from.maxRooms;
		breakerFailures = from.breakerFailures;
		breakerProbeInterval = from.breakerProbeInterval;
	}

	@Override
	DecodeConfig copy() {
		return new DecodeConfig(this);
	}

	@Override
	public DisaggregationMode mode() {
		return DisaggregationMode.DECODE;
	}

	/** @return whether prefill is asked for a CRC32C of each room's bytes, compared with what landed */
	public boolean checksums() {
		return checksums;
	}

	/** @return connections to each prefill rank, over which a room's bytes are dealt (1: one connection) */
	public int stripes() {
		return stripes;
	}

	/** @return rooms in flight with one prefill rank before further ones are refused as overloaded */
	public int maxRoomsPerPeer() {
		return maxRoomsPerPeer;
	}

	/** @return rooms in flight in all before further ones are refused as overloaded */
	public int maxRooms() {
		return maxRooms;
	}

	/** @return failures in a row with one prefill rank that open its circuit breaker (0: never) */
	public int breakerFailures() {
		return breakerFailures;
	}

	/** @return how often a prefill rank whose breaker is open is probed */
	public Duration breakerProbeInterval() {
		return breakerProbeInterval;
	}
}
