package io.kvferry.internal;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import io.kvferry.DisaggregationMode;
import io.kvferry.FailureCause;
import io.kvferry.KVArgs;
import io.kvferry.KVManager;
import io.kvferry.KVManagerConfig;
import io.kvferry.KVPoll;
import io.kvferry.KVStats;
import io.kvferry.KVStatusEvent;
import io.kvferry.ParallelLayout;
import io.kvferry.RoomTrace;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.PeerLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/** What prefill and decode managers share: the configuration, the room table, counters and disposal. */
abstract class BaseKVManager<R extends Room, C extends KVManagerConfig> implements KVManager {

	private static final Logger log = LoggerFactory.getLogger(BaseKVManager.class);

	final C config;
	final String name;
	final RoomTable<R> table;
	// The tracing integration, deferred to the callback scheduler; null without tracing.
	final DeferredRoomTracer tracing;
	final PeerLayout ownLayout;
	// Drawn once per manager: the peers' caches tell this process from an earlier one on the same host and port.
	final long incarnation = Incarnation.draw();
	private final AtomicBoolean disposed = new AtomicBoolean();
	private final Sinks.Empty<Void> released = Sinks.empty();
	final LongAdder bytesSent = new LongAdder();
	final LongAdder bytesReceived = new LongAdder();
	final LongAdder pagesSent = new LongAdder();
	private final LongAdder heartbeatLosses = new LongAdder();
	private final LongAdder succeeded = new LongAdder();
	private final Map<FailureCause, LongAdder> failures = new EnumMap<>(FailureCause.class);

	/** @param ownLayout this rank's layout as its peers see it in the handshake */
	BaseKVManager(C config, PeerLayout ownLayout) {
		this.config = config;
		this.name = config.name();
		this.ownLayout = ownLayout;
		for (FailureCause c : FailureCause.values()) {
			failures.put(c, new LongAdder());
		}
		this.tracing = DeferredRoomTracer.of(config.tracer(), config.callbackScheduler());
		this.table = new RoomTable<>(name, config.timer(), config.callbackScheduler(), config.bootstrapTimeout(),
				config.waitingTimeout(), config.transferTimeout(), config.eventBufferSize(), this::count,
				this::ended);
		table.recordTo(config.metricsRecorder(), config.mode());
	}

	@Override
	public DisaggregationMode mode() {
		return config.mode();
	}

	@Override
	public KVArgs kvArgs() {
		return config.kvArgs();
	}

	@Override
	public ParallelLayout layout() {
		return config.layout();
	}

	@Override
	public long incarnation() {
		return incarnation;
	}

	@Override
	public KVPoll status(long room) {
		R r = table.get(room);
		return r == null ? null : r.state();
	}

	@Override
	public Flux<KVStatusEvent> events() {
		return table.events();
	}

	@Override
	public boolean isDisposed() {
		return disposed.get();
	}

	@Override
	public void dispose() {
		if (!disposed.compareAndSet(false, true)) {
			return;
		}
		for (R r : table.all()) {
			table.fail(r, FailureCause.CLOSED, "KV manager " + name + " was closed", false);
		}
		table.complete();
		closeResources().subscribe(null, e -> {
			log.warn("[{}] closing did not finish cleanly: {}", name, Failures.describe(e));
			released.tryEmitEmpty();
		}, released::tryEmitEmpty);
	}

	@Override
	public Mono<Void> drain(Duration deadline) {
		Objects.requireNonNull(deadline, "deadline");
		if (deadline.isNegative()) {
			throw new IllegalArgumentException("deadline : " + deadline + " (expected: >= 0)");
		}
		return Mono.defer(() -> {
			String reason = drainingReason();
			boolean first = table.drainReason() == null;
			table.drain(reason);
			if (first) {
				log.info("[{}] draining: admitting no new rooms, {} in flight may take up to {}", name,
						table.all().size(), deadline);
				onDraining(table.drainReason());
			}
			Mono<Void> ended = table.drained()
					.timeout(deadline, Mono.defer(() -> abortUndrained(deadline)), config.timer());
			return Mono.when(ended, drainResources());
		}).publishOn(config.callbackScheduler());
	}

	@Override
	public boolean isDraining() {
		return table.drainReason() != null;
	}

	/** Aborts every room still live when a drain's deadline passed; completes once they ended. */
	private Mono<Void> abortUndrained(Duration deadline) {
		int aborted = 0;
		for (R r : table.all()) {
			if (table.fail(r, FailureCause.DRAINING, "KV manager " + name + " was draining and room " + r.id
					+ " did not end within the drain deadline of " + deadline + "; aborted", false)) {
				aborted++;
			}
		}
		log.warn("[{}] drain deadline of {} passed: aborted {} rooms", name, deadline, aborted);
		return table.drained();
	}

	/** @return why a draining manager refuses new rooms: it names this manager */
	String drainingReason() {
		return "KV manager " + name + " is draining and admits no new rooms";
	}

	/** Role-specific steps when a drain starts (called once, before waiting for the rooms). */
	void onDraining(String reason) {
	}

	/** @return what a drain waits for besides the rooms (a prefill manager's withdrawn registration) */
	Mono<Void> drainResources() {
		return Mono.empty();
	}

	@Override
	public Mono<Void> onDispose() {
		return released.asMono();
	}

	private void count(R room, KVPoll outcome) {
		if (outcome == KVPoll.SUCCESS) {
			succeeded.increment();
		}
		else {
			failures.get(room.cause()).increment();
		}
	}

	@Override
	public KVStats stats() {
		Map<KVPoll, Integer> live = new EnumMap<>(KVPoll.class);
		for (R r : table.all()) {
			KVPoll s = r.state();
			if (s != null && !s.isTerminal()) {
				live.merge(s, 1, Integer::sum);
			}
		}
		Map<FailureCause, Long> failed = new EnumMap<>(FailureCause.class);
		long failedTotal = 0;
		for (Map.Entry<FailureCause, LongAdder> e : failures.entrySet()) {
			long n = e.getValue().sum();
			failed.put(e.getKey(), n);
			failedTotal += n;
		}
		PeerBreakers breakers = peerBreakers();
		return new KVStats(bytesSent.sum(), bytesReceived.sum(), pagesSent.sum(), succeeded.sum(), failedTotal, live,
				failed, connectionCount(), heartbeatLosses.sum(), breakers.open(), breakers.opened(),
				breakers.probesFailed());
	}

	/** @return the circuit breakers of the peers this manager asks for rooms ({@link PeerBreakers#NONE}: none) */
	PeerBreakers peerBreakers() {
		return PeerBreakers.NONE;
	}

	/** Counts a connection the transport closed because the peer went silent. */
	void connectionClosed(CloseReason reason) {
		if (reason.kind() == CloseReason.Kind.SILENT_PEER) {
			heartbeatLosses.increment();
		}
	}

	private void ended(R room) {
		RoomTrace trace = traceAtEnd(room);
		if (trace != RoomTrace.NONE) {
			trace.travelled(room.path(), room.phases());
			trace.end(room.state(), room.cause(), room.reason());
		}
		onTerminal(room);
	}

	/** @return the trace to end for a room that just ended */
	RoomTrace traceAtEnd(R room) {
		return room.trace;
	}

	/**
	 * Opens a room's trace on this thread, so that its context is known at once; only where no library lock is held.
	 *
	 * @return {@link RoomTrace#NONE} without tracing
	 */
	RoomTrace traceNow(DisaggregationMode side, long room, String parentContext, long startEpochNanos) {
		return tracing == null ? RoomTrace.NONE : tracing.startNow(side, name, room, parentContext, startEpochNanos);
	}

	/** @return open peer connections */
	abstract int connectionCount();

	/** Engine cleanup once a room ended (called once, after its terminal state was published). */
	abstract void onTerminal(R room);

	/** Releases listeners and connections after every room failed; completes when they are released. */
	abstract Mono<Void> closeResources();

	void checkOpen() {
		if (disposed.get()) {
			throw new IllegalStateException("KV manager " + name + " is closed");
		}
	}

	@Override
	public String toString() {
		return name;
	}
}
