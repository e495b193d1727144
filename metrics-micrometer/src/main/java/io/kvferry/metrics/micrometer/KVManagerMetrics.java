package io.kvferry.metrics.micrometer;

import java.util.Objects;
import java.util.concurrent.TimeUnit;

import io.kvferry.FailureCause;
import io.kvferry.KVManager;
import io.kvferry.KVMetricsRecorder;
import io.kvferry.KVPoll;
import io.kvferry.RoomPath;
import io.kvferry.RoomPhases;
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
 * <li>{@code kvferry.peer.breakers.open} (gauge), {@code kvferry.peer.breaker.opened} and
 * {@code kvferry.peer.breaker.probes.failed} (function counters) — decode's circuit breakers per prefill rank;</li>
 * <li>{@code kvferry.room.failures{cause}} — failed rooms by {@link FailureCause} (its {@link FailureCause#tag()}),
 * function counters over {@link KVManager#stats()} (so a failure is counted before anyone sees the room fail).</li>
 * </ul>
 * Every meter carries the tags {@code manager} (its name) and {@code mode}. Room durations
 * ({@code kvferry.room.duration{outcome, path}}) and phase times ({@code kvferry.room.phase{outcome, path, phase}})
 * come from {@link #recorder(MeterRegistry)}, which the manager's spec takes.
 *
 * <pre>{@code
 * DecodeKVManager manager = KVManagerSpec.decode().metricsRecorder(KVManagerMetrics.recorder(registry))...startNow();
 * Disposable metrics = KVManagerMetrics.bind(manager, registry);
 * }</pre>
 */
public final class KVManagerMetrics implements Disposable {

	private static final RoomPhases.Phase[] PHASES = RoomPhases.Phase.values();

	private volatile boolean disposed;

	private KVManagerMetrics() {
	}

	/**
	 * Registers the meters read from the manager's statistics.
	 *
	 * @param manager the manager
	 * @param registry where meters go
	 * @return a handle (the meters stay registered; they read the manager when scraped)
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
		Gauge.builder("kvferry.peer.breakers.open", manager, m -> m.stats().peerBreakersOpen())
				.description("prefill ranks whose circuit breaker is open: their new rooms fail at once")
				.tags(tags).register(registry);
		FunctionCounter.builder("kvferry.peer.breaker.opened", manager, m -> m.stats().peerBreakersOpened())
				.description("times a prefill rank's circuit breaker opened after failures in a row")
				.tags(tags).register(registry);
		FunctionCounter.builder("kvferry.peer.breaker.probes.failed", manager, m -> m.stats().peerProbesFailed())
				.description("probes of prefill ranks whose breaker is open that failed; one that succeeds readmits "
						+ "the rank")
				.tags(tags).register(registry);
		return new KVManagerMetrics();
	}

	/**
	 * The meters a manager records as its rooms end: {@code kvferry.room.duration{manager, mode, outcome, path}}, a
	 * timer with percentiles from a room's first state to its last, and {@code kvferry.room.phase{manager, mode,
	 * outcome, path, phase}}, the time in each phase the room went through ({@link RoomPhases.Phase#tag()}: at most
	 * five values, as {@code path} has a handful: {@link RoomPath#tag()}). Give it to the manager's spec; the manager
	 * calls it at each room's end, so no room is missed (as one could be when read from the lossy event stream).
	 *
	 * <pre>{@code
	 * KVManagerSpec.decode().metricsRecorder(KVManagerMetrics.recorder(registry))...
	 * }</pre>
	 *
	 * @param registry where meters go
	 * @return the recorder
	 */
	public static KVMetricsRecorder recorder(MeterRegistry registry) {
		Objects.requireNonNull(registry, "registry");
		return new KVMetricsRecorder() {
			@Override
			public void roomEnded(RoomEnded ended) {
				Tags tags = Tags.of("manager", ended.manager(), "mode", ended.mode().name().toLowerCase(), "outcome",
						ended.outcome() == KVPoll.SUCCESS ? "success" : "failure", "path", ended.path().tag());
				Timer.builder("kvferry.room.duration").description("from a room's first state to its last")
						.tags(tags).publishPercentiles(0.5, 0.99).register(registry)
						.record(ended.durationNanos(), TimeUnit.NANOSECONDS);
				for (RoomPhases.Phase phase : PHASES) {
					long nanos = ended.phases().nanos(phase);
					if (nanos >= 0) {
						Timer.builder("kvferry.room.phase").description("a room's time in one phase on this manager")
								.tags(tags.and("phase", phase.tag())).publishPercentiles(0.5, 0.99).register(registry)
								.record(nanos, TimeUnit.NANOSECONDS);
					}
				}
			}
		};
	}

	@Override
	public void dispose() {
		disposed = true;
	}

	@Override
	public boolean isDisposed() {
		return disposed;
	}
}
