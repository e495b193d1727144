package io.kvferry;

import java.time.Duration;
import java.util.function.Consumer;

import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The read-only configuration of one manager, as {@link KVManagerSpec} assembled it: what an implementation reads,
 * with every default already applied. Role-specific settings hold their defaults on the other role.
 *
 * @param mode the role
 * @param kvArgs the rank's registered memory
 * @param layout the rank's parallel layout
 * @param transport moves messages and bytes (shared; not disposed with the manager)
 * @param bootstrapClient talks to bootstrap servers or a registry (shared; not disposed with the manager)
 * @param bootstrapTimeout limit of Bootstrapping (zero: none)
 * @param waitingTimeout limit of WaitingForInput (zero: none)
 * @param transferTimeout limit of Transferring (zero: none)
 * @param handshakeTimeout bound of one handshake with a prefill rank, and of an abort's acknowledgement
 * @param timer runs timeouts and retries (virtual time in tests); null: {@link Schedulers#parallel()} as it is when
 *        read, so that a spec made before the schedulers are replaced uses the ones of its start
 * @param callbackScheduler where subscribers of states, completions, events and room requests are called; null:
 *        {@link Schedulers#boundedElastic()} as it is when read
 * @param eventBufferSize per-subscriber buffer of the hot streams
 * @param name the name log lines and metrics carry
 * @param checksums decode: ask prefill for a CRC32C of each room's bytes and compare
 * @param bootstrapAddress prefill: where the rank registers (null on decode)
 * @param bindAddress prefill: where it listens
 * @param advertiseHost prefill: the host decode ranks dial, or null for the bind host (or the detected address)
 * @param reregisterInterval prefill: how often it registers again (zero: never)
 * @param tracer opens a trace of each room ({@link RoomTracer#NONE}: none)
 * @param allCpRanksTransfer prefill with CP: every CP rank sends its share of a room's pages (else CP rank 0 sends
 *        all and the others only take part)
 * @param dsaCacheLayerSplit prefill with CP: KV layers are split across CP ranks, each sending its own layers
 * @param stripes decode: connections to each prefill rank, over which a room's bytes are dealt (1: one connection)
 * @param unclaimedRoomsPerPeer prefill: rooms one decode rank may have asked for that no sender claimed yet
 * @param unclaimedRooms prefill: such rooms from all decode ranks together
 * @param unclaimedRoomTimeout prefill: how long a room asked for waits for its sender before it fails
 * @param metricsRecorder told as each room opens and ends ({@link KVMetricsRecorder#NONE}: nothing)
 * @param optimisticRooms prefill: rooms whose sender may hold chunks sent before every decode rank asked
 * @param optimisticWait prefill: how long such a room waits for decode's requests after its first early chunk
 * @param requiredPath the path a room must travel by, else it fails ({@link RoomPath.Requirement#ANY}: any)
 * @param maxRoomsPerPeer decode: rooms in flight with one prefill rank before further ones are refused as overloaded
 * @param maxRooms decode: rooms in flight in all before further ones are refused as overloaded
 * @param overloadRetryAfter the retry hint of an overload refusal before any room succeeded, and its ceiling
 * @param leasePeriod prefill: how long it holds a room a decode rank asked for without that rank renewing the room's
 *        lease; decode renews every third of it (zero: no leases)
 * @param firstStripeBytes prefill: how many of a room's first bytes to a striped decode rank go on stripe 0 alone
 *        before the rest is dealt over every stripe
 * @param breakerFailures decode: failures in a row with one prefill rank that open its circuit breaker (0: never)
 * @param breakerProbeInterval decode: how often a rank whose breaker is open is probed
 */
public record KVManagerConfig(DisaggregationMode mode, @Nullable KVArgs kvArgs, ParallelLayout layout, @Nullable KVTransport transport,
		@Nullable BootstrapClient bootstrapClient, Duration bootstrapTimeout, Duration waitingTimeout, Duration transferTimeout,
		Duration handshakeTimeout, @Nullable Scheduler timer, @Nullable Scheduler callbackScheduler, int eventBufferSize, @Nullable String name,
		boolean checksums, @Nullable HostPort bootstrapAddress, HostPort bindAddress, @Nullable String advertiseHost,
		Duration reregisterInterval, RoomTracer tracer, boolean allCpRanksTransfer, boolean dsaCacheLayerSplit,
		int stripes, int unclaimedRoomsPerPeer, int unclaimedRooms, Duration unclaimedRoomTimeout,
		KVMetricsRecorder metricsRecorder, int optimisticRooms, Duration optimisticWait,
		RoomPath.Requirement requiredPath, int maxRoomsPerPeer, int maxRooms, Duration overloadRetryAfter,
		Duration leasePeriod, long firstStripeBytes, int breakerFailures, Duration breakerProbeInterval) {

	/**
	 * @return the timer set, else {@link Schedulers#parallel()} now: a default is looked up when used, not when the
	 *         spec was made, as {@code Schedulers.setFactory} and virtual time in tests replace it
	 */
	@Override
	public Scheduler timer() {
		Scheduler t = timer;
		return t != null ? t : Schedulers.parallel();
	}

	/** @return the callback scheduler set, else {@link Schedulers#boundedElastic()} now (looked up when used) */
	@Override
	public Scheduler callbackScheduler() {
		Scheduler s = callbackScheduler;
		return s != null ? s : Schedulers.boundedElastic();
	}

	/** @return a copy whose unset schedulers are the defaults of this moment, so that the manager keeps them */
	KVManagerConfig withSchedulersResolved() {
		if (timer != null && callbackScheduler != null) {
			return this;
		}
		Scheduler t = timer();
		Scheduler s = callbackScheduler();
		return with(d -> {
			d.timer = t;
			d.callbackScheduler = s;
		});
	}

	/** @return a copy with the changes {@code edit} makes to a draft of this configuration */
	KVManagerConfig with(Consumer<Draft> edit) {
		Draft d = new Draft(this);
		edit.accept(d);
		return d.build();
	}

	/** A mutable copy, for {@link #with} only. */
	static final class Draft {
		DisaggregationMode mode;
		KVArgs kvArgs;
		ParallelLayout layout;
		KVTransport transport;
		BootstrapClient bootstrapClient;
		Duration bootstrapTimeout;
		Duration waitingTimeout;
		Duration transferTimeout;
		Duration handshakeTimeout;
		Scheduler timer;
		Scheduler callbackScheduler;
		int eventBufferSize;
		String name;
		boolean checksums;
		HostPort bootstrapAddress;
		HostPort bindAddress;
		String advertiseHost;
		Duration reregisterInterval;
		RoomTracer tracer;
		boolean allCpRanksTransfer;
		boolean dsaCacheLayerSplit;
		int stripes;
		int unclaimedRoomsPerPeer;
		int unclaimedRooms;
		Duration unclaimedRoomTimeout;
		KVMetricsRecorder metricsRecorder;
		int optimisticRooms;
		Duration optimisticWait;
		RoomPath.Requirement requiredPath;
		int maxRoomsPerPeer;
		int maxRooms;
		Duration overloadRetryAfter;
		Duration leasePeriod;
		long firstStripeBytes;
		int breakerFailures;
		Duration breakerProbeInterval;

		private Draft(KVManagerConfig c) {
			mode = c.mode;
			kvArgs = c.kvArgs;
			layout = c.layout;
			transport = c.transport;
			bootstrapClient = c.bootstrapClient;
			bootstrapTimeout = c.bootstrapTimeout;
			waitingTimeout = c.waitingTimeout;
			transferTimeout = c.transferTimeout;
			handshakeTimeout = c.handshakeTimeout;
			timer = c.timer;
			callbackScheduler = c.callbackScheduler;
			eventBufferSize = c.eventBufferSize;
			name = c.name;
			checksums = c.checksums;
			bootstrapAddress = c.bootstrapAddress;
			bindAddress = c.bindAddress;
			advertiseHost = c.advertiseHost;
			reregisterInterval = c.reregisterInterval;
			tracer = c.tracer;
			allCpRanksTransfer = c.allCpRanksTransfer;
			dsaCacheLayerSplit = c.dsaCacheLayerSplit;
			stripes = c.stripes;
			unclaimedRoomsPerPeer = c.unclaimedRoomsPerPeer;
			unclaimedRooms = c.unclaimedRooms;
			unclaimedRoomTimeout = c.unclaimedRoomTimeout;
			metricsRecorder = c.metricsRecorder;
			optimisticRooms = c.optimisticRooms;
			optimisticWait = c.optimisticWait;
			requiredPath = c.requiredPath;
			maxRoomsPerPeer = c.maxRoomsPerPeer;
			maxRooms = c.maxRooms;
			overloadRetryAfter = c.overloadRetryAfter;
			leasePeriod = c.leasePeriod;
			firstStripeBytes = c.firstStripeBytes;
			breakerFailures = c.breakerFailures;
			breakerProbeInterval = c.breakerProbeInterval;
		}

		private KVManagerConfig build() {
			return new KVManagerConfig(mode, kvArgs, layout, transport, bootstrapClient, bootstrapTimeout,
					waitingTimeout, transferTimeout, handshakeTimeout, timer, callbackScheduler, eventBufferSize, name,
					checksums, bootstrapAddress, bindAddress, advertiseHost, reregisterInterval, tracer,
					allCpRanksTransfer, dsaCacheLayerSplit, stripes, unclaimedRoomsPerPeer, unclaimedRooms,
					unclaimedRoomTimeout, metricsRecorder, optimisticRooms, optimisticWait, requiredPath,
					maxRoomsPerPeer, maxRooms, overloadRetryAfter, leasePeriod, firstStripeBytes, breakerFailures,
					breakerProbeInterval);
		}
	}
}
