package io.kvferry;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

import io.kvferry.internal.KVManagers;
import io.kvferry.internal.stripe.StripedConnection;
import reactor.core.publisher.Mono;

/**
 * The spec of a decode rank's manager. It finds prefill instances through the bootstrap address each receiver names.
 * Made by {@link KVManagerSpec#decode()}; immutable.
 */
public final class DecodeSpec extends KVManagerSpec<DecodeSpec, DecodeKVManager> {

	/** Default connections per prefill rank: two keep a loopback or LAN link busier than one (see {@link #stripes}). */
	public static final int DEFAULT_STRIPES = 2;
	/** Most connections per prefill rank that a prefill rank admits. */
	public static final int MAX_STRIPES = StripedConnection.MAX_WIDTH;
	/** Default bound of the rooms in flight with one prefill rank. */
	public static final int DEFAULT_MAX_ROOMS_PER_PEER = 4096;
	/** Default bound of the rooms in flight on the manager. */
	public static final int DEFAULT_MAX_ROOMS = 16384;
	/** Default failures in a row with one prefill rank that open its circuit breaker. */
	public static final int DEFAULT_BREAKER_FAILURES = 5;
	/** Default pause before each probe of a prefill rank whose circuit breaker is open. */
	public static final Duration DEFAULT_BREAKER_PROBE_INTERVAL = Duration.ofSeconds(1);

	DecodeSpec(DecodeConfig config) {
		super(config);
	}

	@Override
	DecodeSpec with(KVManagerConfig config) {
		return new DecodeSpec((DecodeConfig) config);
	}

	/** @return a spec over a copy of the configuration with the changes {@code edit} makes to this role's part */
	private DecodeSpec role(Consumer<DecodeConfig> edit) {
		return edit(c -> edit.accept((DecodeConfig) c));
	}

	@Override
	public DecodeConfig config() {
		return (DecodeConfig) super.config();
	}

	/**
	 * Asks every prefill rank for a CRC32C of each room's bytes with its Success, and fails a room whose bytes that
	 * landed have another checksum. Without it a Success is still checked against the byte count that landed; the
	 * checksum adds a read of every landed byte here and of every sent byte on prefill.
	 *
	 * @param checksums default false
	 * @return a new spec
	 */
	public DecodeSpec checksums(boolean checksums) {
		return role(c -> c.checksums = checksums);
	}

	/**
	 * Sets how many connections this rank opens to each prefill rank. A room's bytes are dealt across them in pieces of
	 * at most 4 MiB, each connection on an event loop of its own; control messages travel on the first. One TCP
	 * connection is bound by the one thread that copies its bytes in and out of the kernel, so two move more where
	 * cores are free; more than the cores gain nothing.
	 *
	 * @param stripes 1 .. {@value #MAX_STRIPES}; 1 keeps one connection per prefill rank; default
	 *        {@value #DEFAULT_STRIPES}
	 * @return a new spec
	 */
	public DecodeSpec stripes(int stripes) {
		if (stripes < 1 || stripes > MAX_STRIPES) {
			throw new IllegalArgumentException("stripes : " + stripes + " (expected: 1.." + MAX_STRIPES
					+ " connections per prefill rank)");
		}
		return role(c -> c.stripes = stripes);
	}

	/**
	 * Bounds the rooms in flight (opened by {@code receiver(...)} and not ended yet): with any one prefill rank, and in
	 * all. A room over a bound is not queued: its receiver is returned already failed with a
	 * {@link KVOverloadException} (cause {@link FailureCause#OVERLOAD}) carrying a retry hint, and the prefill ranks it
	 * would have asked are told, so that their sender fails the same way at once instead of waiting for the bootstrap
	 * timeout. A room whose prefill instance is not resolved yet counts towards {@code total} only.
	 *
	 * @param perPeer rooms in flight with one prefill rank; default {@value #DEFAULT_MAX_ROOMS_PER_PEER}
	 * @param total rooms in flight on this manager; default {@value #DEFAULT_MAX_ROOMS}
	 * @return a new spec
	 */
	public DecodeSpec maxRooms(int perPeer, int total) {
		if (perPeer < 1 || total < perPeer) {
			throw new IllegalArgumentException("maxRooms : " + perPeer + " per prefill rank, " + total
					+ " in all (expected: 1 <= perPeer <= total)");
		}
		return role(c -> {
			c.maxRoomsPerPeer = perPeer;
			c.maxRooms = total;
		});
	}

	/**
	 * Sets the circuit breaker kept per prefill rank. Failures to reach a rank are counted in a row: a connection or
	 * handshake that failed (once per attempt, however many rooms waited on it); a session that opens or a room that
	 * succeeds starts the count again. Rooms a reachable rank fails ({@link FailureCause#PEER_FAILED}) do not count:
	 * its engine gives up rooms for reasons of their own (aborts, leases), and an abort storm must not cut off a
	 * healthy rank. At
	 * {@code failures} the breaker opens: every new room that would ask the rank fails at once with
	 * {@link FailureCause#PEER_UNAVAILABLE} (its reason names the rank and the last failure), without a connection
	 * attempt, and a probe runs every {@code probeInterval} on the manager's timer: it looks the rank up and opens its
	 * session (or finds it open). The first probe that succeeds closes the breaker. A rank that the registry reports
	 * moved, restarted or removed, or that shows another incarnation, starts with a closed breaker; one the registry no
	 * longer knows is not probed.
	 *
	 * @param failures failures in a row that open a rank's breaker, 1 or more; 0 turns breakers off; default
	 *        {@value #DEFAULT_BREAKER_FAILURES}
	 * @param probeInterval pause before each probe, at least 1 ms; default 1 s
	 * @return a new spec
	 */
	public DecodeSpec peerBreaker(int failures, Duration probeInterval) {
		Objects.requireNonNull(probeInterval, "probeInterval");
		if (failures < 0 || probeInterval.toMillis() < 1) {
			throw new IllegalArgumentException("peerBreaker : " + failures + " failures, probe every " + probeInterval
					+ " (expected: failures >= 0, 0 turning breakers off, and a probe interval of at least 1 ms)");
		}
		return role(c -> {
			c.breakerFailures = failures;
			c.breakerProbeInterval = probeInterval;
		});
	}

	@Override
	void validate(KVManagerConfig c) {
		super.validate(c);
		// super.validate refused a config without KVArgs.
		if (c.layout().attnCpSize() != 1 && !Objects.requireNonNull(c.kvArgs(), "kvArgs").isMla()) {
			// Decode's CP is decode context parallelism (DCP): only MLA KV is spread token by token over its ranks.
			throw new IllegalStateException("layout : attn_cp_size=" + c.layout().attnCpSize()
					+ " on decode without MLA (expected: 1; PD decode DCP requires an MLA or hybrid-MLA KV pool)");
		}
	}

	@Override
	Mono<DecodeKVManager> start(KVManagerConfig config) {
		return KVManagers.decode((DecodeConfig) config);
	}
}
