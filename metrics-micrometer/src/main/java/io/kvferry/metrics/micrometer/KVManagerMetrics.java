package io.kvferry.metrics.micrometer;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.kvferry.FailureCause;
import io.kvferry.KVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVStatusEvent;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import reactor.core.Disposable;

/**
 * Publishes a {@link KVManager}'s counters and room outcomes to Micrometer:
 * <ul>
 * <li>{@code kvferry.bytes.sent}, {@code kvferry.bytes.received}, {@code kvferry.pages.sent} — function counters over
 * {@link KVManager#stats()};</li>
 * <li>{@code kvferry.heartbeats.missed} — connections closed because the peer went silent;</li>
 * <li>{@code kvferry.rooms.live{state}} and {@code kvferry.connections} — gauges;</li>
 * <li>{@code kvferry.room.duration{outcome}} — a timer with percentiles from a room's first state to its last;</li>
 * <li>{@code kvferry.room.failures{cause}} — failed rooms by {@link FailureCause} (its {@link FailureCause#tag()}),
 * function counters over {@link KVManager#stats()} (so a failure is counted before anyone sees the room fail).</li>
 * </ul>
 * Every meter carries the tags {@code manager} (its name) and {@code mode}.
 *
 * <pre>{@code
 * Disposable metrics = KVManagerMetrics.bind(manager, prometheusRegistry);
 * }</pre>
 */
public final class KVManagerMetrics implements Disposable {

	private final Disposable subscription;

	private KVManagerMetrics(Disposable subscription) {
		this.subscription = subscription;
	}

	/**
	 * Registers the meters and starts following the manager's events.
	 *
	 * @param manager the manager
	 * @param registry where meters go
	 * @return a handle; disposing it stops the event-driven meters (gauges stay registered)
	 */
	public static KVManagerMetrics bind(KVManager manager, MeterRegistry registry) {
		Objects.requireNonNull(manager, "manager");
		Objects.requireNonNull(registry, "registry");
		Tags tags = Tags.of("manager", manager.toString(), "mode", manager.mode().name().toLowerCase());
		FunctionCounter.builder("kvferry.bytes.sent", manager, m -> m.stats().bytesSent()).baseUnit("bytes")
				.description("KV, aux and state bytes handed to the transport").tags(tags).register(registry);
		FunctionCounter.builder("kvferry.bytes.received", manager, m -> m.stats().bytesReceived()).baseUnit("bytes")
				.description("bytes written into this rank's registered memory").tags(tags).register(registry);
		FunctionCounter.builder("kvferry.pages.sent", manager, m -> m.stats().pagesSent())
				.description("pages sent, once per destination").tags(tags).register(registry);
		FunctionCounter.builder("kvferry.heartbeats.missed", manager, m -> m.stats().heartbeatLosses())
				.description("connections closed because the peer sent nothing for two heartbeat intervals")
				.tags(tags).register(registry);
		for (KVPoll state : KVPoll.values()) {
			if (!state.isTerminal()) {
				Gauge.builder("kvferry.rooms.live", manager, m -> m.stats().liveRooms().getOrDefault(state, 0))
						.description("rooms by current state").tags(tags.and("state", state.name().toLowerCase()))
						.register(registry);
			}
		}
		for (FailureCause cause : FailureCause.values()) {
			FunctionCounter.builder("kvferry.room.failures", manager, m -> m.stats().failures().get(cause))
					.description("failed rooms by cause").tags(tags.and("cause", cause.tag())).register(registry);
		}
		Gauge.builder("kvferry.connections", manager, m -> m.stats().connections())
				.description("open peer connections").tags(tags).register(registry);
		Timer success = Timer.builder("kvferry.room.duration").tags(tags.and("outcome", "success"))
				.description("from a room's first state to its last").publishPercentiles(0.5, 0.99).register(registry);
		Timer failure = Timer.builder("kvferry.room.duration").tags(tags.and("outcome", "failure"))
				.description("from a room's first state to its last").publishPercentiles(0.5, 0.99).register(registry);
		Map<Long, Long> started = new ConcurrentHashMap<>();
		Disposable sub = manager.events().subscribe(e -> record(e, started, success, failure));
		return new KVManagerMetrics(sub);
	}

	private static void record(KVStatusEvent e, Map<Long, Long> started, Timer success, Timer failure) {
		if (e.previous() == null) {
			started.put(e.room(), e.timestampNanos());
		}
		if (!e.current().isTerminal()) {
			return;
		}
		Long start = started.remove(e.room());
		Timer t = e.current() == KVPoll.SUCCESS ? success : failure;
		if (start != null) {
			t.record(e.timestampNanos() - start, TimeUnit.NANOSECONDS);
		}
	}

	@Override
	public void dispose() {
		subscription.dispose();
	}

	@Override
	public boolean isDisposed() {
		return subscription.isDisposed();
	}
}
