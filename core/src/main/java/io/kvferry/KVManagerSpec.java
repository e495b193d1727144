package io.kvferry;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.spi.KVTransport;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * An immutable description of a manager: every setter returns a new spec, and {@link #start()} builds the manager.
 * One spec per role, so that a prefill manager can only be asked prefill things and a decode manager decode things:
 *
 * <pre>{@code
 * PrefillKVManager prefill = KVManagerSpec.prefill()
 *         .kvArgs(args)
 *         .layout(ParallelLayout.tp(2, 0))
 *         .transport(NettyKVTransport.create())
 *         .bootstrapClient(ReactorBootstrapClient.create())
 *         .bootstrapAddress(HostPort.parse("10.0.0.5:8998"))
 *         .startNow();
 *
 * DecodeKVManager decode = KVManagerSpec.decode()
 *         .kvArgs(decodeArgs)
 *         .transport(transport)
 *         .bootstrapClient(client)
 *         .startNow();
 * }</pre>
 *
 * @param <S> the spec's own type
 * @param <M> the manager it starts
 */
public abstract class KVManagerSpec<S extends KVManagerSpec<S, M>, M extends KVManager> {

	/** SGLang's default for each state's timeout. */
	public static final Duration DEFAULT_STATE_TIMEOUT = Duration.ofSeconds(300);
	/** Default bound of one handshake with a prefill rank. */
	public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);
	/** Default period of a prefill rank's re-registration (so a restarted bootstrap server learns it again). */
	public static final Duration DEFAULT_REREGISTER_INTERVAL = Duration.ofSeconds(10);
	/** Default retry hint of an overload refusal before any room succeeded on the manager, and its ceiling. */
	public static final Duration DEFAULT_OVERLOAD_RETRY_AFTER = Duration.ofSeconds(1);
	/** Default per-subscriber buffer of the hot streams. */
	public static final int DEFAULT_EVENT_BUFFER = 1 << 16;

	final KVManagerConfig config;

	KVManagerSpec(KVManagerConfig config) {
		this.config = config;
	}

	/** @return a prefill spec with defaults: single rank, 300 s timeouts, listening on any free port */
	public static PrefillSpec prefill() {
		return new PrefillSpec(new PrefillConfig());
	}

	/** @return a decode spec with defaults: single rank, 300 s timeouts */
	public static DecodeSpec decode() {
		return new DecodeSpec(new DecodeConfig());
	}

	/** @return a spec of this role over {@code config} */
	abstract S with(KVManagerConfig config);

	/** @return a spec over a copy of the configuration with the changes {@code edit} makes to it */
	final S edit(Consumer<KVManagerConfig> edit) {
		KVManagerConfig copy = config.copy();
		edit.accept(copy);
		return with(copy);
	}

	/** @return a new spec with the rank's registered memory */
	public S kvArgs(KVArgs kvArgs) {
		Objects.requireNonNull(kvArgs, "kvArgs");
		return edit(c -> c.kvArgs = kvArgs);
	}

	/** @return a new spec with the rank's parallel layout (default {@link ParallelLayout#SINGLE}) */
	public S layout(ParallelLayout layout) {
		Objects.requireNonNull(layout, "layout");
		return edit(c -> c.layout = layout);
	}

	/** @return a new spec using that transport (shared by managers; not disposed with them) */
	public S transport(KVTransport transport) {
		Objects.requireNonNull(transport, "transport");
		return edit(c -> c.transport = transport);
	}

	/** @return a new spec using that bootstrap client or registry (shared; not disposed with the manager) */
	public S bootstrapClient(BootstrapClient client) {
		Objects.requireNonNull(client, "client");
		return edit(c -> c.bootstrapClient = client);
	}

	/** @return a new spec with that Bootstrapping timeout (zero disables; default 300 s) */
	public S bootstrapTimeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		return edit(c -> c.bootstrapTimeout = timeout);
	}

	/** @return a new spec with that WaitingForInput timeout (zero disables; default 300 s) */
	public S waitingTimeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		return edit(c -> c.waitingTimeout = timeout);
	}

	/** @return a new spec with that Transferring timeout (zero disables; default 300 s) */
	public S transferTimeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		return edit(c -> c.transferTimeout = timeout);
	}

	/**
	 * @param timeout bound of setting up a session with a prefill rank (connecting, the handshake, every stripe
	 *        joining), timed on this manager's timer, and of a prefill rank's acknowledgement of an abort (one that
	 *        does not acknowledge in time is disconnected); default 10 s
	 * @return a new spec
	 */
	public S handshakeTimeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		return edit(c -> c.handshakeTimeout = timeout);
	}

	/**
	 * @param timer runs timeouts and retries (virtual time in tests); default {@link Schedulers#parallel()} as it is
	 *        when the manager starts, not when the spec is made
	 * @return a new spec
	 */
	public S timer(Scheduler timer) {
		Objects.requireNonNull(timer, "timer");
		return edit(c -> c.timer = timer);
	}

	/**
	 * Sets where the library calls its subscribers: every {@code states()}, {@code completion()}, {@code events()} and
	 * {@code roomRequests()} subscriber runs there, each on a worker of its own, never on a transport thread and never
	 * under a library lock. So a subscriber may block or call back into the library (abort a room, start another);
	 * it then delays only its own signals.
	 *
	 * @param scheduler default {@link Schedulers#boundedElastic()} as it is when the manager starts
	 * @return a new spec
	 */
	public S callbackScheduler(Scheduler scheduler) {
		Objects.requireNonNull(scheduler, "scheduler");
		return edit(c -> c.callbackScheduler = scheduler);
	}

	/**
	 * Makes every room travel by a given path or fail, on either side. A room whose connection to any of its peers
	 * does not meet the requirement (a peer that can only do TCP when shared memory is required, a connection without
	 * TLS when TLS is) fails with {@link FailureCause#INCOMPATIBLE} and a reason naming the required and the actual
	 * path, instead of falling back silently to a slower or unprotected path: on decode before any byte is asked for, on
	 * prefill as the decode rank's request arrives, before any byte is sent (that decode rank is refused with the
	 * reason). Both sides check their own end of the same connections, so either may insist.
	 *
	 * @param requirement default {@link RoomPath.Requirement#ANY}
	 * @return a new spec
	 */
	public S requirePath(RoomPath.Requirement requirement) {
		Objects.requireNonNull(requirement, "requirement");
		return edit(c -> c.requiredPath = requirement);
	}

	/**
	 * Sets the retry hint a room turned away as overloaded carries ({@link KVOverloadException#retryAfter()}), on the
	 * rank that refuses it and on its peer. The hint is the mean time rooms took from their first state to Success on
	 * this manager lately (by Little's law, the time in which the rooms holding a bound now have ended on average),
	 * at least 1 ms; before any room succeeded it is this value, which also caps it.
	 *
	 * @param retryAfter &gt; 0; default 1 s
	 * @return a new spec
	 */
	public S overloadRetryAfter(Duration retryAfter) {
		Objects.requireNonNull(retryAfter, "retryAfter");
		if (retryAfter.isNegative() || retryAfter.isZero() || retryAfter.compareTo(Duration.ofMinutes(5)) > 0) {
			throw new IllegalArgumentException("overloadRetryAfter : " + retryAfter + " (expected: > 0 and <= 5 min)");
		}
		return edit(c -> c.overloadRetryAfter = retryAfter);
	}

	/** @return a new spec with that per-subscriber buffer of the hot streams (default 65,536) */
	public S eventBufferSize(int size) {
		if (size < 1) {
			throw new IllegalArgumentException("eventBufferSize : " + size + " (expected: >= 1)");
		}
		return edit(c -> c.eventBufferSize = size);
	}

	/**
	 * @param tracer opens a trace of each room, e.g. {@code OpenTelemetryRoomTracer} of {@code kvferry-tracing-otel};
	 *        default {@link RoomTracer#NONE}, which costs no allocation
	 * @return a new spec
	 */
	public S tracer(RoomTracer tracer) {
		Objects.requireNonNull(tracer, "tracer");
		return edit(c -> c.tracer = tracer);
	}

	/**
	 * @param recorder told on the callback scheduler as each room opens and ends, e.g. {@code KVManagerMetrics.recorder}
	 *        of {@code kvferry-metrics-micrometer}; default {@link KVMetricsRecorder#NONE}
	 * @return a new spec
	 */
	public S metricsRecorder(KVMetricsRecorder recorder) {
		Objects.requireNonNull(recorder, "recorder");
		return edit(c -> c.metricsRecorder = recorder);
	}

	/** @return a new spec whose log lines carry that name (default: role and ranks, e.g. {@code prefill-dp0-tp1-pp0}) */
	public S name(String name) {
		Objects.requireNonNull(name, "name");
		return edit(c -> c.name = name);
	}

	/**
	 * @return the configuration a manager started now would have, defaults applied: unset schedulers are the current
	 *         {@link Schedulers} defaults, so {@link #start()} resolves them when it is subscribed
	 */
	public KVManagerConfig config() {
		KVManagerConfig c = config.copy();
		c.timer = c.timer();
		c.callbackScheduler = c.callbackScheduler();
		if (c.name == null) {
			ParallelLayout l = c.layout();
			String role = c.mode() == DisaggregationMode.PREFILL ? "prefill" : "decode";
			c.name = role + "-dp" + l.dpGroup() + "-tp" + l.attnTpRank() + "-pp" + l.ppRank()
					+ (l.attnCpSize() > 1 ? "-cp" + l.attnCpRank() : "");
		}
		return c;
	}

	/**
	 * Starts the manager. Lazy: nothing happens before subscription.
	 *
	 * @return the running manager; errors with {@link IllegalStateException} naming a missing part
	 */
	public final Mono<M> start() {
		return Mono.defer(() -> {
			KVManagerConfig c = config();
			validate(c);
			return start(c);
		});
	}

	abstract Mono<M> start(KVManagerConfig config);

	/** Blocking {@link #start()} for mains and tests, bounded by 45 s. */
	public final M startNow() {
		return startNow(Duration.ofSeconds(45));
	}

	/**
	 * Blocking {@link #start()} for mains and tests. A start that does not finish in time is cancelled, which closes
	 * whatever it had opened (a prefill manager's listener).
	 *
	 * @throws KVFerryException naming what did not start in time, or the start's own failure
	 */
	public final M startNow(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		// A start emits its manager or fails: it never completes empty.
		return Objects.requireNonNull(start().timeout(timeout, Mono.error(() -> new KVFerryException(config().name()
				+ " did not start within " + timeout + startingPart())))
				.block(), "started manager");
	}

	/** @return what a start that timed out was waiting for, for its message (", registration with ...") */
	String startingPart() {
		return "";
	}

	void validate(KVManagerConfig c) {
		if (c.kvArgs() == null) {
			throw new IllegalStateException("kvArgs : missing (expected: the rank's registered memory)");
		}
		if (c.transport() == null) {
			throw new IllegalStateException("transport : missing (expected: e.g. NettyKVTransport.create())");
		}
		if (c.bootstrapClient() == null) {
			throw new IllegalStateException("bootstrapClient : missing (expected: e.g. ReactorBootstrapClient.create())");
		}
	}

	@Override
	public String toString() {
		return getClass().getSimpleName() + config;
	}
}
