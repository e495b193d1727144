package io.kvferry.transport.ucx;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.MemoryRegion;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.HandshakeSecret;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.transport.ucx.internal.UcxNode;
import io.kvferry.transport.ucx.internal.UcxSettings;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A {@link KVTransport} on UCX (through its Java binding JUCX): control messages as UCX active messages, KV bytes read
 * one-sided by decode from prefill's registered pages where the UCX transport between the two ranks does RMA natively
 * (shared memory on one host, InfiniBand or RoCE verbs between hosts), or carried in active messages where it only
 * emulates RMA (TCP). The same code runs over TCP here and over RDMA on a cluster with nothing but {@link #tls} changed.
 *
 * <pre>{@code
 * UcxKVTransport transport = UcxKVTransport.create().tls("rc,sm,self");
 * PrefillKVManager prefill = PrefillSpec.create().transport(transport).kvArgs(args)...start().block();
 * }</pre>
 *
 * <p>A manager registers its rank's regions as it starts ({@link #register}): one UCX registration per region, whose
 * remote key a listening (prefill) rank announces to a decode rank that reads one-sided, on its connection, before the
 * first read of the region. Decode opens nothing of its own memory to the peer: it reads each block into the pages its
 * own grant accepted, after its ledger reserved the block.
 *
 * <p>A listener's address is a TCP port that carries each connection's handshake (UCX worker addresses, the data
 * path) and nothing else; the UCX traffic then uses the network devices UCX is allowed ({@link #netDevices}). UCX
 * progress runs on one thread per transport (plus a timer and short-lived handshake threads), never on the caller's.
 * Configuration methods return new transports; each makes its UCX context on first use.
 */
public final class UcxKVTransport implements KVTransport, Disposable {

	private final UcxSettings settings;
	private @Nullable UcxNode node;
	private boolean disposed;

	private UcxKVTransport(UcxSettings settings) {
		this.settings = settings;
	}

	/** @return a transport with UCX's default transports, the data path chosen per connection, 5 s heartbeats */
	public static UcxKVTransport create() {
		return new UcxKVTransport(UcxSettings.DEFAULT);
	}

	/**
	 * Sets the UCX transports to use, as {@code UCX_TLS} names them: {@code tcp}; {@code posix,cma,self} (shared
	 * memory on one host); {@code rc,ud,sm,self} (InfiniBand or RoCE). Both sides of a connection must allow a common
	 * one.
	 *
	 * @param tls a comma-separated list; empty for UCX's default (the environment's {@code UCX_TLS}, else all)
	 * @return a new transport
	 */
	public UcxKVTransport tls(String tls) {
		Objects.requireNonNull(tls, "tls");
		return with(new UcxSettings(tls.trim(), settings.netDevices(), settings.dataPath(),
				settings.heartbeatInterval(), settings.handshakeTimeout(), settings.hostIdentity(), settings.config(),
				settings.secret()));
	}

	/**
	 * Sets the network devices UCX may use, as {@code UCX_NET_DEVICES} names them ({@code lo}, {@code eth0},
	 * {@code mlx5_0:1}).
	 *
	 * @param devices a comma-separated list; empty for UCX's default
	 * @return a new transport
	 */
	public UcxKVTransport netDevices(String devices) {
		Objects.requireNonNull(devices, "devices");
		return with(new UcxSettings(settings.tls(), devices.trim(), settings.dataPath(), settings.heartbeatInterval(),
				settings.handshakeTimeout(), settings.hostIdentity(), settings.config(), settings.secret()));
	}

	/**
	 * Sets how KV bytes move; the listening side decides per connection, honouring either side's explicit wish.
	 *
	 * @param path default {@link UcxDataPath#AUTO}
	 * @return a new transport
	 */
	public UcxKVTransport dataPath(UcxDataPath path) {
		Objects.requireNonNull(path, "path");
		return with(new UcxSettings(settings.tls(), settings.netDevices(), path, settings.heartbeatInterval(),
				settings.handshakeTimeout(), settings.hostIdentity(), settings.config(), settings.secret()));
	}

	/**
	 * Sets the heartbeat interval, announced to each peer in the handshake: a side sends something at least once per
	 * interval, and closes a connection it heard nothing from for two of the peer's intervals (a dead peer fails its
	 * rooms on both sides within that, plus a quarter of this side's interval, how often it looks). The two sides need
	 * not agree, as over TCP.
	 *
	 * @param interval 10 ms to 10 minutes (default 5 s)
	 * @return a new transport
	 */
	public UcxKVTransport heartbeatInterval(Duration interval) {
		Objects.requireNonNull(interval, "interval");
		return with(new UcxSettings(settings.tls(), settings.netDevices(), settings.dataPath(), interval,
				settings.handshakeTimeout(), settings.hostIdentity(), settings.config(), settings.secret()));
	}

	/**
	 * Bounds a connection's handshake, and how long a close waits for the peer to answer that it reads nothing more.
	 *
	 * @param timeout at least 1 ms (default 10 s)
	 * @return a new transport
	 */
	public UcxKVTransport handshakeTimeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		return with(new UcxSettings(settings.tls(), settings.netDevices(), settings.dataPath(),
				settings.heartbeatInterval(), timeout, settings.hostIdentity(), settings.config(), settings.secret()));
	}

	/**
	 * Names this host for the choice of shared memory (containers of one host that see different boot ids).
	 *
	 * @param identity default: the kernel's boot id
	 * @return a new transport
	 */
	public UcxKVTransport hostIdentity(String identity) {
		Objects.requireNonNull(identity, "identity");
		return with(new UcxSettings(settings.tls(), settings.netDevices(), settings.dataPath(),
				settings.heartbeatInterval(), settings.handshakeTimeout(), identity, settings.config(),
				settings.secret()));
	}

	/**
	 * Sets one more UCX context setting, by its name without the {@code UCX_} prefix ({@code RNDV_THRESH}, {@code IB_GID_INDEX}).
	 *
	 * @return a new transport
	 */
	public UcxKVTransport config(String name, String value) {
		Map<String, String> config = new HashMap<>(settings.config());
		config.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
		return with(new UcxSettings(settings.tls(), settings.netDevices(), settings.dataPath(),
				settings.heartbeatInterval(), settings.handshakeTimeout(), settings.hostIdentity(), config,
				settings.secret()));
	}

	/**
	 * Requires both sides of every connection to prove this secret in the handshake (HMAC-SHA256 challenge-response;
	 * the secret never crosses the wire), as {@code NettyKVTransport.sharedSecret} does. A listener proves nothing and
	 * tells nothing (no UCX worker address, no connection id, no remote key) to a peer before that peer proved the
	 * secret, and refuses a peer whose handshake socket reached another address than the listener's own (a relay
	 * between them); a connecting side accepts a listener only once it proved the secret over both sides' hellos.
	 * Configure the same secret on every prefill and decode rank: at least 32 random bytes, since a recorded
	 * handshake lets a short passphrase be guessed offline.
	 *
	 * <p>The secret authenticates the handshake only: UCX carries the messages and reads after it unencrypted and
	 * unauthenticated, so a party that can watch the handshake's TCP connection or the UCX traffic is not kept out
	 * (docs/security.md says what a peer can read).
	 *
	 * @param secret at least one byte; copied
	 * @return a new transport
	 */
	public UcxKVTransport sharedSecret(byte[] secret) {
		Objects.requireNonNull(secret, "secret");
		return with(new UcxSettings(settings.tls(), settings.netDevices(), settings.dataPath(),
				settings.heartbeatInterval(), settings.handshakeTimeout(), settings.hostIdentity(), settings.config(),
				HandshakeSecret.of(secret)));
	}

	/**
	 * Same as {@link #sharedSecret(byte[])} with the UTF-8 bytes of {@code secret}.
	 *
	 * @param secret at least one character
	 * @return a new transport
	 */
	public UcxKVTransport sharedSecret(String secret) {
		Objects.requireNonNull(secret, "secret");
		return sharedSecret(secret.getBytes(StandardCharsets.UTF_8));
	}

	private static UcxKVTransport with(UcxSettings settings) {
		return new UcxKVTransport(settings);
	}

	/** @return the UCX transports this transport allows and how it picks its data path, for logs and summaries */
	public String describe() {
		return "UCX transports " + (settings.tls().isEmpty() ? "default" : settings.tls())
				+ (settings.netDevices().isEmpty() ? "" : " on " + settings.netDevices()) + ", data path "
				+ settings.dataPath().name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ');
	}

	private synchronized UcxNode node() {
		if (disposed) {
			throw new KVFerryException("UCX transport disposed");
		}
		if (node == null) {
			String problem = Ucx.unavailabilityReason();
			if (problem != null) {
				throw new KVFerryException(problem);
			}
			node = new UcxNode(settings);
		}
		return node;
	}

	@Override
	public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
		Objects.requireNonNull(bindAddress, "bindAddress");
		Objects.requireNonNull(acceptor, "acceptor");
		return Mono.defer(() -> node().listen(bindAddress, acceptor));
	}

	@Override
	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		Objects.requireNonNull(remote, "remote");
		Objects.requireNonNull(handler, "handler");
		return Mono.defer(() -> node().connect(remote, handler));
	}

	/**
	 * Registers each region with UCX (host memory, or device memory where UCX was built with CUDA or ROCm support:
	 * the region's {@link io.kvferry.MemoryKind} is passed as UCX's memory type). Regions registered before a decode
	 * rank connects are readable one-sided over its connection; a block from memory registered later, or never, goes as
	 * active messages.
	 */
	@Override
	public Mono<Disposable> register(List<MemoryRegion> regions) {
		Objects.requireNonNull(regions, "regions");
		return Mono.defer(() -> node().register(regions));
	}

	/** Closes every listener and connection (peers hear of it), then the UCX worker and context; never blocks. */
	@Override
	public synchronized void dispose() {
		disposed = true;
		if (node != null) {
			node.dispose();
		}
	}

	/** @return completes once the UCX progress thread ended and the context closed (at once if it never started) */
	public synchronized Mono<Void> onDispose() {
		return node == null ? Mono.empty() : node.onDispose();
	}

	/** Disposes and waits until {@link #onDispose()} completed. */
	public void disposeNow(Duration timeout) {
		dispose();
		try {
			onDispose().block(timeout);
		}
		catch (IllegalStateException e) {
			throw new KVFerryException("UCX transport did not stop within " + timeout, e);
		}
	}

	@Override
	public synchronized boolean isDisposed() {
		return disposed;
	}

	/** @return what this transport's connections received so far, by path */
	public synchronized UcxStats stats() {
		return node == null ? new UcxStats(0, 0, 0, 0, 0) : node.stats();
	}

	/** @return bytes the transport's buffers hold now (headers, control messages, bounce buffers) */
	public synchronized long allocatedBytes() {
		return node == null ? 0 : node.allocatedBytes();
	}

	@Override
	public String toString() {
		return "UcxKVTransport{" + settings + "}";
	}
}
