package io.kvferry.transport.netty;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.internal.EventLoopResources;
import io.kvferry.transport.netty.internal.SharedSecret;
import io.kvferry.transport.netty.internal.TransportChannels;
import io.kvferry.transport.netty.internal.TransportSettings;
import io.kvferry.transport.netty.internal.shm.ShmConfig;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * The TCP {@link KVTransport}: plain Netty, Epoll when available (or io_uring, {@link #ioMode}), one event loop group shared by every listener and
 * connection of this transport: the caller's ({@link #loopResources}, {@link #runOn}), or by default one of its own,
 * created on first use and released by {@link #dispose()}.
 *
 * <p>Configured as an immutable builder: every setter returns a new transport with the changed setting and no event
 * loop group of its own yet, so configure first and then use one instance.
 * <pre>{@code
 * NettyKVTransport transport = NettyKVTransport.create()
 *         .heartbeatInterval(Duration.ofSeconds(2))
 *         .maxFrameLength(8 << 20);
 * KVTransport.Listener listener = transport.listen(new HostPort("0.0.0.0", 0), conn -> engine).block(timeout);
 * KVConnection conn = transport.connect(listener.address(), engine).block(timeout);
 * ...
 * transport.dispose();
 * }</pre>
 *
 * <p>The wire protocol (preface, frame types, byte layout) is documented on
 * {@link io.kvferry.transport.netty.internal.KVFrameCodec}. Sockets use {@code TCP_NODELAY} and {@code SO_KEEPALIVE};
 * listeners bind with {@code SO_REUSEADDR}. Each side writes a heartbeat after one idle interval, announces its
 * interval in the handshake, and closes a connection it read nothing from for two of the peer's. Data blocks are sent
 * from registered memory without copying (strided blocks are gathered into one direct buffer per frame); outbound
 * memory per connection stays bounded by the write-buffer watermark plus one frame.
 *
 * <p>Security, both optional and independent: {@link #sharedSecret(byte[])} makes the handshake a mutual
 * challenge-response that admits only peers knowing the same secret (the secret never goes on the wire);
 * {@link #secure} runs every connection inside TLS. Without TLS the frames after the handshake are neither encrypted
 * nor integrity-protected, so a secret alone keeps out strangers, not someone on the path.
 *
 * <p>Thread-safe. {@link #listen} and {@link #connect} are lazy and never block; their results, and every
 * {@link ConnectionHandler} call, are delivered on the transport's event loop threads, which must not be blocked.
 */
public final class NettyKVTransport implements KVTransport, Disposable {

	/** Shortest {@link #heartbeatInterval}: the shortest interval a peer accepts in the handshake. */
	public static final Duration MIN_HEARTBEAT_INTERVAL = TransportSettings.MIN_HEARTBEAT_INTERVAL;

	/** Longest {@link #heartbeatInterval}: the longest interval a peer accepts in the handshake. */
	public static final Duration MAX_HEARTBEAT_INTERVAL = TransportSettings.MAX_HEARTBEAT_INTERVAL;

	private final TransportSettings settings;
	// The caller's loops (runOn, loopResources), or null: the transport makes and owns some. Every copy keeps them.
	private final @Nullable Supplier<EventLoopResources> external;
	private final TransportChannels channels;
	private final TransportLoops loops;

	private NettyKVTransport(@Nullable Supplier<EventLoopResources> external, TransportSettings settings) {
		this.external = external;
		this.settings = settings;
		this.channels = new TransportChannels(settings);
		this.loops = new TransportLoops(external, settings, channels);
	}

	/**
	 * @return a transport with the default settings (5 s heartbeats, 16 MiB frames, 4/8 MiB watermarks, Epoll, no
	 *         shared secret, no TLS)
	 */
	public static NettyKVTransport create() {
		return new NettyKVTransport(null, TransportSettings.DEFAULT);
	}

	/**
	 * Sets the heartbeat interval: a side writes a heartbeat after writing nothing for one interval and announces it in
	 * the handshake; the peer closes a connection it read nothing from for two of this side's intervals, and this side
	 * one it read nothing from for two of the peer's. Two sides with different intervals therefore keep each other.
	 *
	 * @param interval 10 ms to 10 min, the bounds a peer accepts in the handshake (default 5 s)
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport heartbeatInterval(Duration interval) {
		Objects.requireNonNull(interval, "interval");
		return new NettyKVTransport(external, settings.withHeartbeatInterval(interval));
	}

	/**
	 * Bounds frames: the body of a control frame and the payload of a data frame (larger data blocks are split). A peer
	 * announcing more is disconnected.
	 *
	 * @param length 1 KiB..1 GiB (default 16 MiB); both sides should use the same value
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport maxFrameLength(int length) {
		return new NettyKVTransport(external, settings.withMaxFrameLength(length));
	}

	/**
	 * Sets the write-buffer watermarks: a connection stops handing queued items to Netty when {@code high} bytes are
	 * pending and resumes below {@code low}.
	 *
	 * @param low bytes, &gt; 0 (default 4 MiB)
	 * @param high bytes, &ge; low (default 8 MiB)
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport writeBufferWaterMark(int low, int high) {
		return new NettyKVTransport(external, settings.withWriteBufferWaterMark(low, high));
	}

	/**
	 * @param timeout bound of a TCP connect (default 5 s)
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport connectTimeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		return new NettyKVTransport(external, settings.withConnectTimeout(timeout));
	}

	/**
	 * Requires every peer to prove knowledge of {@code secret} in the handshake, and proves it to them: each side sends
	 * a random 32-byte nonce and answers the other's with an HMAC-SHA256 keyed by the secret, over both nonces, its
	 * role and the endpoint the connecting side dialled (wire details on
	 * {@link io.kvferry.transport.netty.internal.KVFrameCodec}). The secret itself is never sent. A peer with another
	 * secret or none is disconnected on both sides with the reason logged ("shared secret mismatch", "peer did not
	 * prove the shared secret"), never reaches the acceptor, and {@link #connect} errors with a
	 * {@link io.kvferry.ProtocolException}. Both sides must be configured with the same secret; use at least 32 random
	 * bytes (a short passphrase can be guessed offline from a recorded handshake unless TLS hides it).
	 *
	 * <p>A listener refuses a peer that dialled another address than one of its own names ("dialled endpoint
	 * mismatch"), so that a party without the secret cannot relay the handshake from a registry entry pointing at
	 * itself to a real listener. Its names are its socket's local address and {@link #advertisedAddresses}: when peers
	 * reach a listener through NAT, port forwarding or a name that does not resolve to the listener's own address,
	 * list that address there.
	 *
	 * @param secret at least one byte; copied
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport sharedSecret(byte[] secret) {
		Objects.requireNonNull(secret, "secret");
		return new NettyKVTransport(external, settings.withSharedSecret(SharedSecret.of(secret)));
	}

	/**
	 * Same as {@link #sharedSecret(byte[])} with the UTF-8 bytes of {@code secret}.
	 *
	 * @param secret at least one character
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport sharedSecret(String secret) {
		Objects.requireNonNull(secret, "secret");
		return sharedSecret(secret.getBytes(StandardCharsets.UTF_8));
	}

	/**
	 * Names the addresses peers dial this transport's listeners at besides each accepted socket's own local address,
	 * for the shared-secret handshake's check of the dialled endpoint (see {@link #sharedSecret(byte[])}): the public
	 * address of a NAT or port forward, a service name, the host a container's port is published on. A peer matches
	 * when the {@code host:port} it dialled, or the address its socket reached, equals one of them; hosts are compared
	 * as written, never resolved (IP literals by address, names ignoring case), and port 0 stands for the port the
	 * connection arrived on. Without a shared secret the names are not checked.
	 *
	 * @param addresses the names, replacing any set before (none by default)
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport advertisedAddresses(HostPort... addresses) {
		Objects.requireNonNull(addresses, "addresses");
		for (int i = 0; i < addresses.length; i++) {
			Objects.requireNonNull(addresses[i], "addresses[" + i + "]");
		}
		return new NettyKVTransport(external, settings.withAdvertisedAddresses(List.of(addresses)));
	}

	/**
	 * Runs every connection inside TLS: accepted connections with {@code serverContext}, opened ones with
	 * {@code clientContext} (given the peer's host and port for SNI and, if the context enables it, host name
	 * verification; Netty 4.2 client contexts verify host names by default, so the peer's certificate must name the
	 * address connected to). Require client certificates in {@code serverContext} for mutual TLS. A peer that does not
	 * speak TLS, or whose certificate is not trusted, is disconnected with the TLS reason and {@link #connect} errors
	 * with a {@link io.kvferry.ProtocolException}; the kvferry handshake (and the shared secret, if any) runs inside
	 * the TLS session.
	 *
	 * <p>Cost: with TLS, data blocks are no longer sent zero-copy. The sender still wraps registered memory without
	 * copying, but the {@link io.netty.handler.ssl.SslHandler} reads it once to encrypt it into new buffers (and the
	 * receiver decrypts into new buffers before the payload is copied into registered memory).
	 *
	 * @param serverContext a server {@link SslContext}
	 * @param clientContext a client {@link SslContext}
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport secure(SslContext serverContext, SslContext clientContext) {
		Objects.requireNonNull(serverContext, "serverContext");
		Objects.requireNonNull(clientContext, "clientContext");
		return new NettyKVTransport(external, settings.withTls(new TransportSettings.Tls(serverContext, clientContext)));
	}

	/**
	 * @param prefer whether to use a native I/O mode (Epoll by default, see {@link #ioMode}) when it is available (default
	 *        true); NIO otherwise
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport preferNative(boolean prefer) {
		return new NettyKVTransport(external, settings.withPreferNative(prefer));
	}

	/**
	 * How the transport's own event loops do socket I/O (default {@link IoMode#EPOLL}); a mode unavailable here falls
	 * back (io_uring to Epoll, Epoll to NIO) with the reason logged at WARN (io_uring) or DEBUG (Epoll).
	 * {@code ioMode(IoMode.NIO)} is {@code preferNative(false)}. Loops given by {@link #loopResources} or
	 * {@link #runOn} keep their own mode.
	 *
	 * @param mode the I/O mode
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport ioMode(IoMode mode) {
		return ioMode(mode, false);
	}

	/**
	 * {@link #ioMode(IoMode)}, optionally required: then a mode unavailable here makes {@link #listen} and
	 * {@link #connect} fail with a {@link io.kvferry.KVFerryException} that names the reason (for io_uring, the one
	 * Netty's {@code IoUring.unavailabilityCause()} gives: an old kernel, io_uring disabled by
	 * {@code kernel.io_uring_disabled}, a seccomp filter).
	 *
	 * @param mode the I/O mode
	 * @param required whether an unavailable mode is an error instead of a logged fall-back
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport ioMode(IoMode mode, boolean required) {
		Objects.requireNonNull(mode, "mode");
		return new NettyKVTransport(external, settings.withIoMode(mode, required));
	}

	/**
	 * @return the I/O mode of the transport's event loops: the one they run once created (after any fall-back), else
	 *         the one asked for
	 */
	public IoMode ioMode() {
		EventLoopResources res = loops.current();
		return res != null ? res.ioMode() : settings.ioMode();
	}

	/**
	 * @param bytes {@code SO_SNDBUF} and {@code SO_RCVBUF} of every socket, or 0 for the OS default (the default)
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport socketBufferSize(int bytes) {
		return new NettyKVTransport(external, settings.withSocketBufferSize(bytes));
	}

	/**
	 * Runs every listener and connection of the transport on the caller's event loop group instead of one of its own,
	 * as Reactor Netty's {@code runOn} does: several transports (or a transport and the application's own Netty
	 * servers) can then share threads. The caller owns the group: {@link #dispose()} closes the transport's listeners
	 * and connections but never shuts the group down, and {@link #onDispose()} does not wait for its threads. The
	 * group's I/O type picks the channels: io_uring or Epoll for such a group, NIO otherwise; {@link #preferNative} and
	 * {@link #eventLoopThreads} no longer apply.
	 *
	 * <p>By default (without {@code runOn}) the transport creates a group of its own, of {@link #eventLoopThreads}
	 * daemon threads named {@code kvferry-transport-N-M}, when it first listens or connects (so that configuring a
	 * transport costs no threads), and shuts it down when disposed.
	 *
	 * @param group a {@link io.netty.channel.MultiThreadIoEventLoopGroup} with an io_uring, Epoll or NIO I/O handler
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport runOn(EventLoopGroup group) {
		Objects.requireNonNull(group, "group");
		return new NettyKVTransport(() -> EventLoopResources.of(group), settings);
	}

	/**
	 * Runs every listener and connection of the transport on shared {@link LoopResources} instead of loops of its own,
	 * so that several transports (and Reactor Netty clients running on {@link LoopResources#group()}) share threads.
	 * The caller owns the loops: {@link #dispose()} closes the transport's listeners and connections but never
	 * disposes them, and {@link #onDispose()} does not wait for their threads. {@link #preferNative} and
	 * {@link #eventLoopThreads} no longer apply; the last of {@code runOn} and {@code loopResources} wins. A transport
	 * whose loops were disposed errors on {@link #listen} and {@link #connect}.
	 *
	 * @param loops loops made by {@link LoopResources#create}
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport loopResources(LoopResources loops) {
		Objects.requireNonNull(loops, "loops");
		return new NettyKVTransport(loops::lend, settings);
	}

	/**
	 * @param threads event loop threads, &ge; 1 (default: one per core)
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport eventLoopThreads(int threads) {
		return new NettyKVTransport(external, settings.withEventLoopThreads(threads));
	}

	/**
	 * Moves KV bytes through shared memory instead of TCP when both ends of a connection run on this host
	 * ({@link SameHost#AUTO}): the connecting side (decode) offers a staging ring in a file under {@code /dev/shm}, the
	 * accepting side (prefill) maps it when the handshake proves they share a host (the kernel's boot id and the ring
	 * file itself), and copies each payload from its registered memory into a ring slot; decode copies it into its
	 * regions through the same write checks as a TCP frame. Anything else (another host, TLS, no shared directory, no
	 * room in it, a peer with {@link SameHost#OFF}) keeps TCP, the reason logged once. Both sides must turn it on.
	 * Trust: any process of the same user that can open {@code /dev/shm} can read or change the ring's contents.
	 *
	 * @param mode {@link SameHost#AUTO} or {@link SameHost#OFF} (the default)
	 * @return a new {@link NettyKVTransport}; with {@code AUTO} this host's boot id is read now, on the caller's thread
	 */
	public NettyKVTransport sameHost(SameHost mode) {
		Objects.requireNonNull(mode, "mode");
		return new NettyKVTransport(external, settings.withSameHost(ShmConfig.of(mode)));
	}

	/**
	 * Names this host for {@link #sameHost} instead of the kernel's boot id: for containers that see different boot
	 * ids on one host, or to keep two transports of one host apart.
	 *
	 * @param identity what the peer's must equal for the same-host path
	 * @return a new {@link NettyKVTransport}
	 */
	public NettyKVTransport sameHostIdentity(String identity) {
		Objects.requireNonNull(identity, "identity");
		return new NettyKVTransport(external, settings.withSameHost(settings.sameHost().withHostIdentity(identity)));
	}

	/** @return a copy whose same-host rings have another shape, for tests in this package */
	NettyKVTransport sameHostRing(int slots, int slotSize) {
		return new NettyKVTransport(external, settings.withSameHost(settings.sameHost().withRing(slots, slotSize)));
	}

	/** @return a copy whose same-host rings live in {@code directory}, for tests in this package */
	NettyKVTransport sameHostDirectory(java.nio.file.Path directory) {
		return new NettyKVTransport(external, settings.withSameHost(settings.sameHost().withDirectory(directory)));
	}

	/** @return a copy whose same-host offers wait {@code timeout} for their answer, for tests in this package */
	NettyKVTransport sameHostOfferTimeout(Duration timeout) {
		return new NettyKVTransport(external, settings.withSameHost(settings.sameHost().withOfferTimeout(timeout)));
	}

	/**
	 * @return how many connections this transport opened ({@link #connect}, as decode does) received their KV data
	 *         through a same-host shared-memory ring (see {@link #sameHost}), open or closed since; the others used
	 *         TCP
	 */
	public long sameHostConnections() {
		return channels.sameHostOpened();
	}

	/** @return the settings, for tests in this package */
	TransportSettings settings() {
		return settings;
	}

	/** @return whether the event loop group was created, for tests in this package */
	boolean hasEventLoopGroup() {
		return loops.current() != null;
	}

	/** @return the event loops in use (own or the caller's), or null before the first use, for tests in this package */
	@Nullable
	EventLoopGroup eventLoopGroup() {
		EventLoopResources res = loops.current();
		return res == null ? null : res.group();
	}

	/**
	 * Listens for kvferry connections. Each accepted connection gets its handler from {@code acceptor} once the
	 * handshake completed (on the connection's event loop): TLS if configured, a valid preface, the shared secret if
	 * configured. A peer failing any of these (another magic or protocol version, a wrong or missing secret, no TLS) is
	 * logged and disconnected without reaching the acceptor. Disposing the listener closes the connections it
	 * accepted.
	 *
	 * @param bindAddress where to bind; port 0 picks a free port
	 * @param acceptor gives each connection its handler; must not block and must not return {@code null}
	 * @return the listener, with the real port, once bound; errors with a {@link KVFerryException} naming the address
	 *         when the bind fails
	 */
	@Override
	public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
		Objects.requireNonNull(bindAddress, "bindAddress");
		Objects.requireNonNull(acceptor, "acceptor");
		return Mono.defer(() -> channels.listen(loops.acquire(), bindAddress, acceptor));
	}

	/**
	 * Connects to a kvferry listener.
	 *
	 * @param remote the listener's address
	 * @param handler the engine's side of the connection
	 * @return the connection once TCP connected and the handshake completed (TLS if configured, both prefaces, the
	 *         shared secret if configured); errors with a {@link io.kvferry.ProtocolException} when the peer's magic or
	 *         protocol version differs, its shared secret differs or is missing, or TLS fails, and with a
	 *         {@link KVFerryException} naming {@code host:port} when the connect is refused or times out, or the peer
	 *         closes before the handshake completes
	 */
	@Override
	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		Objects.requireNonNull(remote, "remote");
		Objects.requireNonNull(handler, "handler");
		return Mono.defer(() -> channels.connect(loops.acquire(), remote, handler));
	}

	/**
	 * Disposes the transport without blocking: stops every listener, closes every connection (handlers get
	 * {@code onClose("transport disposed")}) and shuts the event loop group down. Later {@link #listen} and
	 * {@link #connect} calls error.
	 */
	@Override
	public void dispose() {
		loops.dispose();
	}

	/**
	 * @return completes once the transport is disposed and its event loop threads ended (at once after disposal if
	 *         they were never created); never errors
	 */
	public Mono<Void> onDispose() {
		return loops.onDispose();
	}

	/**
	 * Disposes the transport and waits until {@link #onDispose()} completes.
	 *
	 * @throws KVFerryException when that takes longer than {@code timeout}
	 */
	public void disposeNow(Duration timeout) {
		dispose();
		try {
			onDispose().block(timeout);
		}
		catch (IllegalStateException e) {
			throw new KVFerryException("transport did not stop within " + timeout, e);
		}
	}

	@Override
	public boolean isDisposed() {
		return loops.isDisposed();
	}

	@Override
	public String toString() {
		return "NettyKVTransport{" + settings + "}";
	}
}
