package io.kvferry.internal;

import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import io.kvferry.DisaggregationMode;
import io.kvferry.KVArgs;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVStatusEvent;
import io.kvferry.KVStats;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.spi.PeerLayout;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** What prefill and decode managers share: the spec, the room table and disposal. */
abstract class BaseKVManager<R extends Room> implements KVManager {

	final KVManagerSpec spec;
	final String name;
	final RoomTable<R> table;
	final PeerLayout ownLayout;
	private final AtomicBoolean disposed = new AtomicBoolean();
	final LongAdder bytesSent = new LongAdder();
	final LongAdder bytesReceived = new LongAdder();
	final LongAdder pagesSent = new LongAdder();
	private final LongAdder heartbeatLosses = new LongAdder();
	private final LongAdder succeeded = new LongAdder();
	private final ConcurrentHashMap<String, LongAdder> failures = new ConcurrentHashMap<>();

	BaseKVManager(KVManagerSpec spec) {
		this.spec = spec;
		this.name = spec.name();
		this.ownLayout = PeerLayout.of(spec.kvArgs(), spec.layout());
		this.table = new RoomTable<>(name, spec.timer(), spec.callbackScheduler(), spec.bootstrapTimeout(), spec.waitingTimeout(),
				spec.transferTimeout(), spec.eventBufferSize(), this::count, this::onTerminal);
	}

	@Override
	public DisaggregationMode mode() {
		return spec.mode();
	}

	@Override
	public KVArgs kvArgs() {
		return spec.kvArgs();
	}

	@Override
	public ParallelLayout layout() {
		return spec.layout();
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
		disposeLater().subscribe(null, e -> { });
	}

	@Override
	public Mono<Void> disposeLater() {
		return Mono.defer(() -> {
			if (!disposed.compareAndSet(false, true)) {
				return Mono.empty();
			}
			for (R r : table.all()) {
				table.update(r, KVPoll.FAILED, "KV manager " + name + " was closed", false);
			}
			table.complete();
			return closeResources();
		});
	}

	private void count(R room) {
		if (room.state() == KVPoll.SUCCESS) {
			succeeded.increment();
		}
		else {
			failures.computeIfAbsent(KVStats.failureCategory(room.reason()), k -> new LongAdder()).increment();
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
		Map<String, Long> failed = new HashMap<>();
		long failedTotal = 0;
		for (Map.Entry<String, LongAdder> e : failures.entrySet()) {
			failed.put(e.getKey(), e.getValue().sum());
			failedTotal += e.getValue().sum();
		}
		return new KVStats(bytesSent.sum(), bytesReceived.sum(), pagesSent.sum(), succeeded.sum(), failedTotal, live,
				failed, connectionCount(), heartbeatLosses.sum());
	}

	/** Counts a connection the transport closed for lack of heartbeats (its reason says so). */
	void connectionClosed(String reason) {
		if (reason != null && reason.contains("no heartbeat")) {
			heartbeatLosses.increment();
		}
	}

	/** @return open peer connections */
	abstract int connectionCount();

	/** Engine cleanup once a room ended (called once, after its terminal state was published). */
	abstract void onTerminal(R room);

	/** Releases listeners and connections after every room failed. */
	abstract Mono<Void> closeResources();

	void checkOpen() {
		if (disposed.get()) {
			throw new IllegalStateException("KV manager " + name + " is closed");
		}
	}

	/** @return the reason recorded for a local abort: it always says it was an abort */
	static String abortReason(String reason) {
		String r = reason == null || reason.isBlank() ? "no reason given" : reason;
		return r.startsWith("Aborted") ? r : "Aborted: " + r;
	}

	/** @return the reason text of a failure, for a room's record */
	static String describe(Throwable t) {
		if (t instanceof KVTransferException k) {
			return k.reason();
		}
		String m = t.getMessage();
		return m == null ? t.getClass().getSimpleName() : m;
	}

	@Override
	public String toString() {
		return name;
	}
}
