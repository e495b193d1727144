package io.kvferry;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

import io.kvferry.bootstrap.BootstrapFields;
import io.kvferry.internal.KVManagers;
import io.kvferry.spi.KVMessage;
import reactor.core.publisher.Mono;

/**
 * The spec of a prefill rank's manager. It listens on {@link #bindAddress} and registers {@link #advertiseHost}:port
 * with its bootstrap server, again every {@link #reregisterInterval} so that a restarted bootstrap server learns it
 * back. Made by {@link KVManagerSpec#prefill()}; immutable.
 */
public final class PrefillSpec extends KVManagerSpec<PrefillSpec, PrefillKVManager> {

	/** Default bound on rooms one decode rank asked for that no sender claimed yet. */
	public static final int DEFAULT_UNCLAIMED_PER_PEER = 1024;
	/** Default bound on such rooms from all decode ranks. */
	public static final int DEFAULT_UNCLAIMED = 4096;
	static final Duration DEFAULT_UNCLAIMED_TIMEOUT = Duration.ofSeconds(60);
	/** Default bound on rooms holding chunks sent before decode asked for them. */
	public static final int DEFAULT_OPTIMISTIC_ROOMS = 1024;
	static final Duration DEFAULT_OPTIMISTIC_WAIT = Duration.ofSeconds(30);
	/** Default lease on the pages of a room a decode rank asked for (vLLM's NIXL connector uses 30 s too). */
	public static final Duration DEFAULT_LEASE_PERIOD = Duration.ofSeconds(30);
	/** Default bytes of a room that go on stripe 0 alone before the rest is dealt over the stripes: 256 KiB. */
	public static final long DEFAULT_FIRST_STRIPE_BYTES = 256 << 10;

	PrefillSpec(PrefillConfig config) {
		super(config);
	}

	@Override
	PrefillSpec with(KVManagerConfig config) {
		return new PrefillSpec((PrefillConfig) config);
	}

	/** @return a spec over a copy of the configuration with the changes {@code edit} makes to this role's part */
	private PrefillSpec role(Consumer<PrefillConfig> edit) {
		return edit(c -> edit.accept((PrefillConfig) c));
	}

	@Override
	public PrefillConfig config() {
		return (PrefillConfig) super.config();
	}

	/** @return a new spec whose manager registers with that bootstrap server (required) */
	public PrefillSpec bootstrapAddress(HostPort address) {
		Objects.requireNonNull(address, "address");
		return role(c -> c.bootstrapAddress = address);
	}

	/** @return a new spec listening there (default 0.0.0.0:0, any free port) */
	public PrefillSpec bindAddress(HostPort address) {
		Objects.requireNonNull(address, "address");
		return role(c -> c.bindAddress = address);
	}

	/**
	 * @param host the address decode ranks should dial (containers, NAT); default: the bind host, or the detected
	 *        local address when binding a wildcard
	 * @return a new spec
	 */
	public PrefillSpec advertiseHost(String host) {
		Objects.requireNonNull(host, "host");
		return role(c -> {
			c.advertiseHost = host;
			c.moreAdvertiseHosts = List.of();
		});
	}

	/**
	 * A rank on a host of several network interfaces: decode ranks dial the first address as with
	 * {@link #advertiseHost} (SGLang's decode dials only that one), and kvferry's decode deals each session's stripes
	 * over all of them, stripe {@code i} to address {@code i} modulo their number, so that a room's bytes spread over
	 * the interfaces. The rank listens on one port for all of them: bind a wildcard address (the default) or one they
	 * all reach.
	 *
	 * @param hosts 1 .. {@value BootstrapFields#MAX_ENDPOINTS} distinct addresses, one per interface
	 * @return a new spec
	 */
	public PrefillSpec advertiseHosts(List<String> hosts) {
		List<String> all = List.copyOf(hosts);
		if (all.isEmpty() || all.size() > BootstrapFields.MAX_ENDPOINTS) {
			throw new IllegalArgumentException("hosts : " + all.size() + " (expected: 1.." + BootstrapFields.MAX_ENDPOINTS
					+ ")");
		}
		if (new HashSet<>(all).size() != all.size()) {
			throw new IllegalArgumentException("hosts : " + all + " (expected: distinct addresses)");
		}
		for (String host : all) {
			new HostPort(host, 1);
		}
		return role(c -> {
			c.advertiseHost = all.get(0);
			c.moreAdvertiseHosts = all.subList(1, all.size());
		});
	}

	/**
	 * Bounds the rooms decode ranks may ask for before the engine claims them with {@code sender(room)}: each such room
	 * holds its request until then, so a peer that asks for many would otherwise hold this rank's memory. A request
	 * over either bound is refused at once: decode's room fails with {@link FailureCause#OVERLOAD}.
	 *
	 * @param perPeer rooms one decode rank may have waiting; default {@value #DEFAULT_UNCLAIMED_PER_PEER}
	 * @param total rooms all decode ranks together may have waiting; default {@value #DEFAULT_UNCLAIMED}
	 * @return a new spec
	 */
	public PrefillSpec unclaimedRooms(int perPeer, int total) {
		if (perPeer < 1 || total < perPeer) {
			throw new IllegalArgumentException("unclaimedRooms : " + perPeer + " per peer, " + total
					+ " in all (expected: 1 <= perPeer <= total)");
		}
		return role(c -> {
			c.unclaimedRoomsPerPeer = perPeer;
			c.unclaimedRooms = total;
		});
	}

	/**
	 * @param timeout how long a room a decode rank asked for waits for the engine's sender before it fails (the
	 *        engine then never made one); default 60 s
	 * @return a new spec
	 */
	public PrefillSpec unclaimedRoomTimeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		if (timeout.isNegative() || timeout.isZero()) {
			throw new IllegalArgumentException("unclaimedRoomTimeout : " + timeout + " (expected: > 0)");
		}
		return role(c -> c.unclaimedRoomTimeout = timeout);
	}

	/**
	 * Bounds optimistic prefill: the engine may call {@code send}/{@code sendLayer} before every decode rank asked for
	 * the room (SGLang starts a prefill before decode bootstrapped it, and sends the cached prefix at once). Such chunks
	 * wait in the sender, their pages still the engine's, and go the moment the last request arrives. Each waiting room
	 * pins engine memory, so both the number of such rooms and their wait are bounded: a room over the count, or whose
	 * requests did not all come within {@code wait} of its first early chunk, fails with {@link FailureCause#REQUEUE},
	 * telling the engine to release the room's pages and queue the request again.
	 *
	 * @param rooms rooms that may hold early chunks at once; default {@value #DEFAULT_OPTIMISTIC_ROOMS}
	 * @param wait how long decode's requests may take after the first early chunk; default 30 s
	 * @return a new spec
	 */
	public PrefillSpec optimisticSends(int rooms, Duration wait) {
		Objects.requireNonNull(wait, "wait");
		if (rooms < 1 || wait.isNegative() || wait.isZero()) {
			throw new IllegalArgumentException("optimisticSends : " + rooms + " rooms, wait " + wait
					+ " (expected: rooms >= 1, wait > 0)");
		}
		return role(c -> {
			c.optimisticRooms = rooms;
			c.optimisticWait = wait;
		});
	}

	/**
	 * Holds the pages of each room a decode rank asked for on a lease that the decode rank renews while its room
	 * waits: every third of the period, one message per decode rank lists the rooms it still holds. A room whose lease
	 * ran out (its decode rank hangs, was stopped, or forgot the room without a word, while the connection stays open)
	 * fails with {@link FailureCause#LEASE_EXPIRED}, and the engine frees its pages when the sender's
	 * {@code completion()} errors, instead of after the state timeouts. Decode learns the period in the handshake.
	 *
	 * @param period how long a room waits for a renewal; zero: no leases (rooms are held until their timeouts);
	 *        default 30 s; otherwise 1 s to 1 h, the bounds a decode rank accepts in the handshake
	 * @return a new spec
	 */
	public PrefillSpec leasePeriod(Duration period) {
		Objects.requireNonNull(period, "period");
		if (period.isNegative() || (!period.isZero() && (period.toMillis() < KVMessage.HelloAck.MIN_LEASE_MILLIS
				|| period.compareTo(Duration.ofMillis(KVMessage.HelloAck.MAX_LEASE_MILLIS)) > 0))) {
			throw new IllegalArgumentException("leasePeriod : " + period + " (expected: zero, or "
					+ KVMessage.HelloAck.MIN_LEASE_MILLIS + ".." + KVMessage.HelloAck.MAX_LEASE_MILLIS + " ms)");
		}
		return role(c -> c.leasePeriod = period);
	}

	/**
	 * How a room's bytes to a decode rank that opened several stripes (connections) are dealt: the first {@code bytes}
	 * go on stripe 0 alone, and only the rest is dealt over every stripe. A room that small then crosses one
	 * connection: its Success names no fence on the others, so no thread of either side wakes for them, which on a
	 * loaded host halves the time and cuts the CPU of a room of a few pages; a larger room still spreads its bytes,
	 * where two connections copying in parallel gain more than the second connection's wake-ups cost. The rest goes in
	 * stretches of as many bytes, each to the stripe with the fewest of the room's bytes so far: a buffer's small
	 * pieces, sent one after another, then land through one decode thread at a time, not alternating piece by piece.
	 *
	 * @param bytes bytes of each room that stay on stripe 0; default {@value #DEFAULT_FIRST_STRIPE_BYTES} (256 KiB);
	 *        0 deals every room over the stripes from its first byte, piece by piece
	 * @return a new spec
	 */
	public PrefillSpec firstStripeBytes(long bytes) {
		if (bytes < 0) {
			throw new IllegalArgumentException("firstStripeBytes : " + bytes + " (expected: >= 0)");
		}
		return role(c -> c.firstStripeBytes = bytes);
	}

	/**
	 * @param interval how often the rank registers again after its first registration, so that a restarted bootstrap
	 *        server (which keeps no state) learns the rank again; zero disables; default 10 s
	 * @return a new spec
	 */
	public PrefillSpec reregisterInterval(Duration interval) {
		Objects.requireNonNull(interval, "interval");
		return role(c -> c.reregisterInterval = interval);
	}

	/**
	 * With context parallelism (CP size above 1 in the layout), lets every CP rank send its contiguous share of each
	 * room's pages (SGLang's {@code SGLANG_DISAGGREGATION_ALL_CP_RANKS_TRANSFER}): pages split into CP-size ranges,
	 * the first {@code pages mod cp} ranks one page more. Off (default), CP rank 0 sends everything and the other CP
	 * ranks complete their senders without moving data. Every CP rank of an instance must use the same value; decode
	 * learns it in the handshake.
	 *
	 * @param on default false
	 * @return a new spec
	 */
	public PrefillSpec allCpRanksTransfer(boolean on) {
		return role(c -> c.allCpRanksTransfer = on);
	}

	/**
	 * With context parallelism, says the KV layers are split across CP ranks (SGLang's
	 * {@code enable_dsa_cache_layer_split}): each CP rank sends all pages of its contiguous share of the layers (the
	 * first {@code layers mod cp} ranks one layer more), and decode pulls from every CP rank. Every CP rank of an
	 * instance must use the same value.
	 *
	 * @param on default false
	 * @return a new spec
	 */
	public PrefillSpec dsaCacheLayerSplit(boolean on) {
		return role(c -> c.dsaCacheLayerSplit = on);
	}

	@Override
	Mono<PrefillKVManager> start(KVManagerConfig config) {
		return KVManagers.prefill((PrefillConfig) config);
	}

	@Override
	String startingPart() {
		return ": registration with the bootstrap server " + ((PrefillConfig) config).bootstrapAddress()
				+ " did not complete";
	}

	@Override
	void validate(KVManagerConfig config) {
		super.validate(config);
		PrefillConfig c = (PrefillConfig) config;
		if (c.bootstrapAddress() == null) {
			throw new IllegalStateException("bootstrapAddress : missing (expected: where the prefill rank registers)");
		}
		if (c.allCpRanksTransfer() && c.dsaCacheLayerSplit()) {
			// Each CP rank then owns some layers of every page: a page share on top would leave pages of its layers out.
			throw new IllegalStateException("allCpRanksTransfer and dsaCacheLayerSplit : both on (expected: at most one;"
					+ " with DSA layer split every CP rank already sends, all pages of its own layers)");
		}
	}
}
