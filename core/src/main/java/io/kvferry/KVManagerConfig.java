package io.kvferry;

import java.time.Duration;

import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The read-only configuration of one manager, as its spec assembled it: what an implementation reads, with every
 * default already applied. This class holds what both roles read; {@link PrefillConfig} and {@link DecodeConfig} add
 * each role's own. Only the spec writes a configuration, on a copy of its own before anyone else sees it: a setting is
 * one field with its default, one getter and one line of the copy constructor.
 */
public abstract sealed class KVManagerConfig permits PrefillConfig, DecodeConfig {

	@Nullable KVArgs kvArgs;
	ParallelLayout layout = ParallelLayout.SINGLE;
	@Nullable KVTransport transport;
	@Nullable BootstrapClient bootstrapClient;
	Duration bootstrapTimeout = KVManagerSpec.DEFAULT_STATE_TIMEOUT;
	Duration waitingTimeout = KVManagerSpec.DEFAULT_STATE_TIMEOUT;
	Duration transferTimeout = KVManagerSpec.DEFAULT_STATE_TIMEOUT;
	Duration handshakeTimeout = KVManagerSpec.DEFAULT_HANDSHAKE_TIMEOUT;
	@Nullable Scheduler timer;
	@Nullable Scheduler callbackScheduler;
	int eventBufferSize = KVManagerSpec.DEFAULT_EVENT_BUFFER;
	@Nullable String name;
	RoomTracer tracer = RoomTracer.NONE;
	KVMetricsRecorder metricsRecorder = KVMetricsRecorder.NONE;
	RoomPath.Requirement requiredPath = RoomPath.Requirement.ANY;
	Duration overloadRetryAfter = KVManagerSpec.DEFAULT_OVERLOAD_RETRY_AFTER;

	/** The defaults. */
	KVManagerConfig() {
	}

	/** A copy of {@code from}, for a spec to change before it hands it out. */
	KVManagerConfig(KVManagerConfig from) {
		kvArgs = from.kvArgs;
		layout = from.layout;
		transport = from.transport;
		bootstrapClient = from.bootstrapClient;
		bootstrapTimeout = from.bootstrapTimeout;
		waitingTimeout = from.waitingTimeout;
		transferTimeout = from.transferTimeout;
		handshakeTimeout = from.handshakeTimeout;
		timer = from.timer;
		callbackScheduler = from.callbackScheduler;
		eventBufferSize = from.eventBufferSize;
		name = from.name;
		tracer = from.tracer;
		metricsRecorder = from.metricsRecorder;
		requiredPath = from.requiredPath;
		overloadRetryAfter = from.overloadRetryAfter;
	}

	/** @return a copy of this configuration, of the same role */
	abstract KVManagerConfig copy();

	/** @return the role */
	public abstract DisaggregationMode mode();

	/** @return the rank's registered memory (a started manager always has it) */
	public final @Nullable KVArgs kvArgs() {
		return kvArgs;
	}

	/** @return the rank's parallel layout */
	public final ParallelLayout layout() {
		return layout;
	}

	/** @return what moves messages and bytes (shared; not disposed with the manager) */
	public final @Nullable KVTransport transport() {
		return transport;
	}

	/** @return what talks to bootstrap servers or a registry (shared; not disposed with the manager) */
	public final @Nullable BootstrapClient bootstrapClient() {
		return bootstrapClient;
	}

	/** @return the limit of Bootstrapping (zero: none) */
	public final Duration bootstrapTimeout() {
		return bootstrapTimeout;
	}

	/** @return the limit of WaitingForInput (zero: none) */
	public final Duration waitingTimeout() {
		return waitingTimeout;
	}

	/** @return the limit of Transferring (zero: none) */
	public final Duration transferTimeout() {
		return transferTimeout;
	}

	/** @return the bound of one handshake with a prefill rank, and of an abort's acknowledgement */
	public final Duration handshakeTimeout() {
		return handshakeTimeout;
	}

	/**
	 * @return what runs timeouts and retries: the timer set, else {@link Schedulers#parallel()} now (a default is
	 *         looked up when used, not when the spec was made, as {@code Schedulers.setFactory} and virtual time in
	 *         tests replace it)
	 */
	public final Scheduler timer() {
		Scheduler t = timer;
		return t != null ? t : Schedulers.parallel();
	}

	/**
	 * @return where subscribers of states, completions, events and room requests are called: the scheduler set, else
	 *         {@link Schedulers#boundedElastic()} now (looked up when used)
	 */
	public final Scheduler callbackScheduler() {
		Scheduler s = callbackScheduler;
		return s != null ? s : Schedulers.boundedElastic();
	}

	/** @return the per-subscriber buffer of the hot streams */
	public final int eventBufferSize() {
		return eventBufferSize;
	}

	/** @return the name log lines and metrics carry (a started manager always has one) */
	public final @Nullable String name() {
		return name;
	}

	/** @return what opens a trace of each room ({@link RoomTracer#NONE}: none) */
	public final RoomTracer tracer() {
		return tracer;
	}

	/** @return what is told as each room opens and ends ({@link KVMetricsRecorder#NONE}: nothing) */
	public final KVMetricsRecorder metricsRecorder() {
		return metricsRecorder;
	}

	/** @return the path a room must travel by, else it fails ({@link RoomPath.Requirement#ANY}: any) */
	public final RoomPath.Requirement requiredPath() {
		return requiredPath;
	}

	/** @return the retry hint of an overload refusal before any room succeeded, and its ceiling */
	public final Duration overloadRetryAfter() {
		return overloadRetryAfter;
	}

	@Override
	public String toString() {
		return getClass().getSimpleName() + "{name=" + name + ", layout=" + layout + ", transport=" + transport + '}';
	}
}
