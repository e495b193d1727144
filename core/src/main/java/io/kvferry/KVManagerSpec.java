package io.kvferry;

import java.time.Duration;
import java.util.Objects;

import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.internal.KVManagers;
import io.kvferry.spi.KVTransport;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Immutable description of a {@link KVManager}; every setter returns a new spec.
 *
 * <pre>{@code
 * KVManager prefill = KVManagerSpec.create()
 *         .mode(DisaggregationMode.PREFILL)
 *         .kvArgs(args)
 *         .layout(ParallelLayout.tp(2, 0))
 *         .transport(NettyKVTransport.create())
 *         .bootstrapClient(ReactorBootstrapClient.create())
 *         .bootstrapAddress(HostPort.parse("10.0.0.5:8998"))
 *         .startNow();
 * }</pre>
 *
 * A prefill manager listens on {@link #bindAddress} and registers {@link #advertiseHost}:port with its bootstrap
 * server; a decode manager finds prefill instances through the bootstrap address each receiver names.
 */
public final class KVManagerSpec {

	/** SGLang's default for each state's timeout. */
	public static final Duration DEFAULT_STATE_TIMEOUT = Duration.ofSeconds(300);
	/** Default bound of one handshake with a prefill rank. */
	public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);
	/** Default period of a prefill rank's re-registration (so a restarted bootstrap server learns it again). */
	public static final Duration DEFAULT_REREGISTER_INTERVAL = Duration.ofSeconds(10);
	/** Default per-subscriber buffer of {@link KVManager#events()}. */
	public static final int DEFAULT_EVENT_BUFFER = 1 << 16;

	private DisaggregationMode mode = DisaggregationMode.PREFILL;
	private KVArgs kvArgs;
	private ParallelLayout layout = ParallelLayout.SINGLE;
	private KVTransport transport;
	private BootstrapClient bootstrapClient;
	private HostPort bootstrapAddress;
	private HostPort bindAddress = new HostPort("0.0.0.0", 0);
	private String advertiseHost;
	private Duration bootstrapTimeout = DEFAULT_STATE_TIMEOUT;
	private Duration waitingTimeout = DEFAULT_STATE_TIMEOUT;
	private Duration transferTimeout = DEFAULT_STATE_TIMEOUT;
	private Duration handshakeTimeout = DEFAULT_HANDSHAKE_TIMEOUT;
	private Duration reregisterInterval = DEFAULT_REREGISTER_INTERVAL;
	private Scheduler timer = Schedulers.parallel();
	private Scheduler callbackScheduler = Schedulers.boundedElastic();
	private int eventBufferSize = DEFAULT_EVENT_BUFFER;
	private boolean checksums;
	private String name;

	private KVManagerSpec() {
	}

	/** @return a spec with defaults: prefill, single rank, 300 s timeouts */
	public static KVManagerSpec create() {
		return new KVManagerSpec();
	}

	private KVManagerSpec copy() {
		KVManagerSpec c = new KVManagerSpec();
		c.mode = mode;
		c.kvArgs = kvArgs;
		c.layout = layout;
		c.transport = transport;
		c.bootstrapClient = bootstrapClient;
		c.bootstrapAddress = bootstrapAddress;
		c.bindAddress = bindAddress;
		c.advertiseHost = advertiseHost;
		c.bootstrapTimeout = bootstrapTimeout;
		c.waitingTimeout = waitingTimeout;
		c.transferTimeout = transferTimeout;
		c.handshakeTimeout = handshakeTimeout;
		c.reregisterInterval = reregisterInterval;
		c.timer = timer;
		c.callbackScheduler = callbackScheduler;
		c.eventBufferSize = eventBufferSize;
		c.checksums = checksums;
		c.name = name;
		return c;
	}

	/** @return a new spec in that mode */
	public KVManagerSpec mode(DisaggregationMode mode) {
		KVManagerSpec c = copy();
		c.mode = Objects.requireNonNull(mode, "mode");
		return c;
	}

	/** @return a new spec with the rank's registered memory */
	public KVManagerSpec kvArgs(KVArgs kvArgs) {
		KVManagerSpec c = copy();
		c.kvArgs = Objects.requireNonNull(kvArgs, "kvArgs");
		return c;
	}

	/** @return a new spec with the rank's parallel layout */
	public KVManagerSpec layout(ParallelLayout layout) {
		KVManagerSpec c = copy();
		c.layout = Objects.requireNonNull(layout, "layout");
		return c;
	}

	/** @return a new spec using that transport (shared by managers; not disposed with them) */
	public KVManagerSpec transport(KVTransport transport) {
		KVManagerSpec c = copy();
		c.transport = Objects.requireNonNull(transport, "transport");
		return c;
	}

	/** @return a new spec using that bootstrap client (shared; not disposed with the manager) */
	public KVManagerSpec bootstrapClient(BootstrapClient client) {
		KVManagerSpec c = copy();
		c.bootstrapClient = Objects.requireNonNull(client, "client");
		return c;
	}

	/** @return a new spec whose prefill manager registers with that bootstrap server */
	public KVManagerSpec bootstrapAddress(HostPort address) {
		KVManagerSpec c = copy();
		c.bootstrapAddress = Objects.requireNonNull(address, "address");
		return c;
	}

	/** @return a new spec listening there (prefill; default 0.0.0.0:0, any free port) */
	public KVManagerSpec bindAddress(HostPort address) {
		KVManagerSpec c = copy();
		c.bindAddress = Objects.requireNonNull(address, "address");
		return c;
	}

	/**
	 * @param host the address decode ranks should dial (containers, NAT); default: the bind host, or the detected
	 *        local address when binding a wildcard
	 * @return a new spec
	 */
	public KVManagerSpec advertiseHost(String host) {
		KVManagerSpec c = copy();
		c.advertiseHost = Objects.requireNonNull(host, "host");
		return c;
	}

	/** @return a new spec with that Bootstrapping timeout (zero disables) */
	public KVManagerSpec bootstrapTimeout(Duration timeout) {
		KVManagerSpec c = copy();
		c.bootstrapTimeout = Objects.requireNonNull(timeout, "timeout");
		return c;
	}

	/** @return a new spec with that WaitingForInput timeout (zero disables) */
	public KVManagerSpec waitingTimeout(Duration timeout) {
		KVManagerSpec c = copy();
		c.waitingTimeout = Objects.requireNonNull(timeout, "timeout");
		return c;
	}

	/** @return a new spec with that Transferring timeout (zero disables) */
	public KVManagerSpec transferTimeout(Duration timeout) {
		KVManagerSpec c = copy();
		c.transferTimeout = Objects.requireNonNull(timeout, "timeout");
		return c;
	}

	/** @return a new spec with that bound on one handshake with a prefill rank */
	public KVManagerSpec handshakeTimeout(Duration timeout) {
		KVManagerSpec c = copy();
		c.handshakeTimeout = Objects.requireNonNull(timeout, "timeout");
		return c;
	}

	/**
	 * @param interval how often a prefill rank registers again after its first registration, so that a restarted
	 *        bootstrap server (which keeps no state) learns the rank again; zero disables
	 * @return a new spec
	 */
	public KVManagerSpec reregisterInterval(Duration interval) {
		KVManagerSpec c = copy();
		c.reregisterInterval = Objects.requireNonNull(interval, "interval");
		return c;
	}

	/** @return a new spec whose timeouts run on that scheduler (virtual time in tests) */
	public KVManagerSpec timer(Scheduler timer) {
		KVManagerSpec c = copy();
		c.timer = Objects.requireNonNull(timer, "timer");
		return c;
	}

	/**
	 * Sets where the library calls its subscribers: every {@code states()}, {@code completion()}, {@code events()} and
	 * {@code roomRequests()} subscriber runs there, each on a worker of its own, never on a transport thread and never
	 * under a library lock. So a subscriber may block or call back into the library (abort a room, start another);
	 * it then delays only its own signals.
	 *
	 * @param scheduler default {@link Schedulers#boundedElastic()}
	 * @return a new spec
	 */
	public KVManagerSpec callbackScheduler(Scheduler scheduler) {
		KVManagerSpec c = copy();
		c.callbackScheduler = Objects.requireNonNull(scheduler, "scheduler");
		return c;
	}

	/** @return a new spec with that per-subscriber event buffer */
	public KVManagerSpec eventBufferSize(int size) {
		if (size < 1) {
			throw new IllegalArgumentException("eventBufferSize : " + size + " (expected: >= 1)");
		}
		KVManagerSpec c = copy();
		c.eventBufferSize = size;
		return c;
	}

	/**
	 * Decode: asks every prefill rank for a CRC32C of each room's bytes with its Success, and fails a room whose bytes
	 * that landed have another checksum. Without it a Success is still checked against the byte count that landed;
	 * the checksum adds a read of every landed byte on decode and of every sent byte on prefill.
	 *
	 * @param checksums default false
	 * @return a new spec
	 */
	public KVManagerSpec checksums(boolean checksums) {
		KVManagerSpec c = copy();
		c.checksums = checksums;
		return c;
	}

	/** @return a new spec whose log lines carry that name (default: mode and ranks) */
	public KVManagerSpec name(String name) {
		KVManagerSpec c = copy();
		c.name = Objects.requireNonNull(name, "name");
		return c;
	}

	/**
	 * Starts the manager: a prefill manager listens, then registers with its bootstrap server (retrying as the
	 * client does); a decode manager is ready at once. Lazy.
	 *
	 * @return the running manager
	 * @throws IllegalStateException (signalled) when a required part is missing
	 */
	public Mono<KVManager> start() {
		return Mono.defer(() -> {
			validate();
			return KVManagers.start(this);
		});
	}

	/** Blocking {@link #start()} for mains and tests, bounded by 45 s. */
	public KVManager startNow() {
		return startNow(Duration.ofSeconds(45));
	}

	/**
	 * Blocking {@link #start()} for mains and tests. A start that does not finish in time is cancelled, which closes
	 * whatever it had opened (a prefill manager's listener).
	 *
	 * @throws KVFerryException naming what did not start in time, or the start's own failure
	 */
	public KVManager startNow(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		return start().timeout(timeout, Mono.error(() -> new KVFerryException(name() + " did not start within "
				+ timeout + (mode == DisaggregationMode.PREFILL ? ": registration with the bootstrap server "
						+ bootstrapAddress + " did not complete" : ""))))
				.block();
	}

	private void validate() {
		if (kvArgs == null) {
			throw new IllegalStateException("kvArgs : missing (expected: the rank's registered memory)");
		}
		if (transport == null) {
			throw new IllegalStateException("transport : missing (expected: e.g. NettyKVTransport.create())");
		}
		if (bootstrapClient == null) {
			throw new IllegalStateException("bootstrapClient : missing (expected: e.g. ReactorBootstrapClient.create())");
		}
		if (mode == DisaggregationMode.PREFILL && bootstrapAddress == null) {
			throw new IllegalStateException("bootstrapAddress : missing (expected: where a prefill rank registers)");
		}
	}

	public DisaggregationMode mode() {
		return mode;
	}

	public KVArgs kvArgs() {
		return kvArgs;
	}

	public ParallelLayout layout() {
		return layout;
	}

	public KVTransport transport() {
		return transport;
	}

	public BootstrapClient bootstrapClient() {
		return bootstrapClient;
	}

	public HostPort bootstrapAddress() {
		return bootstrapAddress;
	}

	public HostPort bindAddress() {
		return bindAddress;
	}

	/** @return the configured advertise host, or null for the default */
	public String advertiseHost() {
		return advertiseHost;
	}

	public Duration bootstrapTimeout() {
		return bootstrapTimeout;
	}

	public Duration waitingTimeout() {
		return waitingTimeout;
	}

	public Duration transferTimeout() {
		return transferTimeout;
	}

	public Duration handshakeTimeout() {
		return handshakeTimeout;
	}

	public Duration reregisterInterval() {
		return reregisterInterval;
	}

	public Scheduler timer() {
		return timer;
	}

	public Scheduler callbackScheduler() {
		return callbackScheduler;
	}

	public boolean checksums() {
		return checksums;
	}

	public int eventBufferSize() {
		return eventBufferSize;
	}

	/** @return the configured name, or a default made of mode and ranks */
	public String name() {
		if (name != null) {
			return name;
		}
		return (mode == DisaggregationMode.PREFILL ? "prefill" : "decode") + "-dp" + layout.dpGroup() + "-tp"
				+ layout.attnTpRank() + "-pp" + layout.ppRank();
	}
}
