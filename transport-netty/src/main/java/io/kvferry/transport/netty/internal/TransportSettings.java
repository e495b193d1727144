package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

import io.kvferry.HostPort;
import io.kvferry.transport.netty.IoMode;
import io.kvferry.transport.netty.internal.shm.ShmConfig;
import io.netty.handler.ssl.SslContext;

/**
 * The immutable settings of a {@link io.kvferry.transport.netty.NettyKVTransport}; every {@code withX} returns a
 * validated copy. Defaults live in {@link #DEFAULT} and nowhere else.
 *
 * @param heartbeatInterval idle time after which a side writes a heartbeat, announced to the peer in the handshake;
 *        the peer closes after twice it without input from this side, and this side after twice the peer's
 * @param maxFrameLength largest control-frame body and largest data-frame payload, in bytes
 * @param writeBufferLow low write-buffer watermark (bytes pending in Netty before the channel turns writable again)
 * @param writeBufferHigh high write-buffer watermark (bytes pending in Netty before the channel turns unwritable)
 * @param connectTimeout bound of one TCP connect
 * @param preferNative whether a native mode is used when available (false exactly when {@code ioMode} is NIO)
 * @param socketBufferSize {@code SO_SNDBUF} and {@code SO_RCVBUF} in bytes, or 0 for the OS default
 * @param eventLoopThreads threads of the transport's event loop group
 * @param sharedSecret the secret both sides must prove in the handshake, or {@code null} for none
 * @param tls the TLS contexts, or {@code null} for plain TCP
 * @param sameHost whether and how KV bytes go through shared memory when the peer is on this host
 * @param advertisedAddresses the addresses peers dial this transport's listeners at besides their sockets' own (NAT,
 *        port forwarding, a service name); port 0 stands for the listener's own port
 * @param ioMode how the event loops do socket I/O
 * @param ioModeRequired whether an unavailable {@code ioMode} is an error instead of a logged fall-back
 */
public record TransportSettings(Duration heartbeatInterval, int maxFrameLength, int writeBufferLow,
		int writeBufferHigh, Duration connectTimeout, boolean preferNative, int socketBufferSize,
		int eventLoopThreads, SharedSecret sharedSecret, Tls tls, ShmConfig sameHost,
		List<HostPort> advertisedAddresses, IoMode ioMode, boolean ioModeRequired) {

	/** Smallest accepted {@link #maxFrameLength}: room for every handshake message of a small layout. */
	public static final int MIN_FRAME_LENGTH = 1024;

	/** Largest accepted {@link #maxFrameLength}: 1 GiB keeps every length and offset within an {@code int}. */
	public static final int MAX_FRAME_LENGTH = 1 << 30;

	/**
	 * Shortest accepted {@link #heartbeatInterval}, the shortest a peer may announce: the idle check of a connection
	 * runs at twice it, so a shorter one would wake the event loop hundreds of times a second per connection.
	 */
	public static final Duration MIN_HEARTBEAT_INTERVAL = Duration.ofMillis(10);

	/**
	 * Longest accepted {@link #heartbeatInterval}, the longest a peer may announce: a peer is judged dead after two of
	 * its own intervals of silence, so this bounds how long a silent peer keeps a connection.
	 */
	public static final Duration MAX_HEARTBEAT_INTERVAL = Duration.ofMinutes(10);

	/**
	 * 5 s heartbeats, 16 MiB frames, 4 MiB / 8 MiB watermarks, 5 s connect timeout, Epoll (NIO when unavailable), one
	 * thread per core, no shared secret, no TLS, no same-host path, no advertised addresses.
	 */
	public static final TransportSettings DEFAULT = new TransportSettings(Duration.ofSeconds(5), 16 << 20, 4 << 20,
			8 << 20, Duration.ofSeconds(5), true, 0, Math.max(1, Runtime.getRuntime().availableProcessors()), null,
			null, ShmConfig.OFF, List.of(), IoMode.EPOLL, false);

	/** Settings whose I/O mode follows {@code preferNative}: Epoll (falling back to NIO) or NIO. */
	public TransportSettings(Duration heartbeatInterval, int maxFrameLength, int writeBufferLow, int writeBufferHigh,
			Duration connectTimeout, boolean preferNative, int socketBufferSize, int eventLoopThreads,
			SharedSecret sharedSecret, Tls tls, ShmConfig sameHost, List<HostPort> advertisedAddresses) {
		this(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout, preferNative,
				socketBufferSize, eventLoopThreads, sharedSecret, tls, sameHost, advertisedAddresses,
				preferNative ? IoMode.EPOLL : IoMode.NIO, false);
	}

	public TransportSettings {
		Objects.requireNonNull(heartbeatInterval, "heartbeatInterval");
		Objects.requireNonNull(ioMode, "ioMode");
		if (preferNative == (ioMode == IoMode.NIO)) {
			throw new IllegalArgumentException("preferNative : " + preferNative + " with ioMode " + ioMode
					+ " (expected: false exactly with NIO)");
		}
		Objects.requireNonNull(connectTimeout, "connectTimeout");
		Objects.requireNonNull(sameHost, "sameHost");
		advertisedAddresses = List.copyOf(Objects.requireNonNull(advertisedAddresses, "advertisedAddresses"));
		if (heartbeatInterval.compareTo(MIN_HEARTBEAT_INTERVAL) < 0
				|| heartbeatInterval.compareTo(MAX_HEARTBEAT_INTERVAL) > 0) {
			throw new IllegalArgumentException("heartbeatInterval : " + heartbeatInterval + " (expected: "
					+ format(MIN_HEARTBEAT_INTERVAL) + ".." + format(MAX_HEARTBEAT_INTERVAL) + ")");
		}
		if (maxFrameLength < MIN_FRAME_LENGTH || maxFrameLength > MAX_FRAME_LENGTH) {
			throw new IllegalArgumentException("maxFrameLength : " + maxFrameLength + " (expected: " + MIN_FRAME_LENGTH
					+ ".." + MAX_FRAME_LENGTH + ")");
		}
		if (writeBufferLow <= 0 || writeBufferHigh < writeBufferLow) {
			throw new IllegalArgumentException("writeBufferWaterMark : low=" + writeBufferLow + " high="
					+ writeBufferHigh + " (expected: 0 < low <= high)");
		}
		if (connectTimeout.toMillis() < 1 || connectTimeout.toMillis() > Integer.MAX_VALUE) {
			throw new IllegalArgumentException("connectTimeout : " + connectTimeout + " (expected: 1 ms.."
					+ Integer.MAX_VALUE + " ms)");
		}
		if (socketBufferSize < 0) {
			throw new IllegalArgumentException("socketBufferSize : " + socketBufferSize
					+ " (expected: > 0, or 0 for the OS default)");
		}
		if (eventLoopThreads < 1) {
			throw new IllegalArgumentException("eventLoopThreads : " + eventLoopThreads + " (expected: >= 1)");
		}
	}

	/** @return a copy with another heartbeat interval */
	public TransportSettings withHeartbeatInterval(Duration interval) {
		return new TransportSettings(interval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout,
				preferNative, socketBufferSize, eventLoopThreads, sharedSecret, tls, sameHost, advertisedAddresses, ioMode,
				ioModeRequired);
	}

	/** @return a copy with another maximum frame length */
	public TransportSettings withMaxFrameLength(int length) {
		return new TransportSettings(heartbeatInterval, length, writeBufferLow, writeBufferHigh, connectTimeout,
				preferNative, socketBufferSize, eventLoopThreads, sharedSecret, tls, sameHost, advertisedAddresses, ioMode,
				ioModeRequired);
	}

	/** @return a copy with other write-buffer watermarks */
	public TransportSettings withWriteBufferWaterMark(int low, int high) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, low, high, connectTimeout, preferNative,
				socketBufferSize, eventLoopThreads, sharedSecret, tls, sameHost, advertisedAddresses, ioMode,
				ioModeRequired);
	}

	/** @return a copy with another connect timeout */
	public TransportSettings withConnectTimeout(Duration timeout) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, timeout,
				preferNative, socketBufferSize, eventLoopThreads, sharedSecret, tls, sameHost, advertisedAddresses, ioMode,
				ioModeRequired);
	}

	/** @return a copy that prefers (or not) a native transport: NIO when not, else Epoll unless a native mode is set */
	public TransportSettings withPreferNative(boolean prefer) {
		IoMode mode = !prefer ? IoMode.NIO : ioMode == IoMode.NIO ? IoMode.EPOLL : ioMode;
		return withIoMode(mode, prefer && ioModeRequired);
	}

	/** @return a copy with another I/O mode, required (an error when unavailable) or falling back when unavailable */
	public TransportSettings withIoMode(IoMode mode, boolean required) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout,
				mode != IoMode.NIO, socketBufferSize, eventLoopThreads, sharedSecret, tls, sameHost,
				advertisedAddresses, mode, required);
	}

	/** @return a copy with another socket buffer size (0 for the OS default) */
	public TransportSettings withSocketBufferSize(int size) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout,
				preferNative, size, eventLoopThreads, sharedSecret, tls, sameHost, advertisedAddresses, ioMode,
				ioModeRequired);
	}

	/** @return a copy with another number of event loop threads */
	public TransportSettings withEventLoopThreads(int threads) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout,
				preferNative, socketBufferSize, threads, sharedSecret, tls, sameHost, advertisedAddresses, ioMode,
				ioModeRequired);
	}

	/** @return a copy with another shared secret ({@code null}: none) */
	public TransportSettings withSharedSecret(SharedSecret secret) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout,
				preferNative, socketBufferSize, eventLoopThreads, secret, tls, sameHost, advertisedAddresses, ioMode,
				ioModeRequired);
	}

	/** @return a copy with other TLS contexts ({@code null}: plain TCP) */
	public TransportSettings withTls(Tls contexts) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout,
				preferNative, socketBufferSize, eventLoopThreads, sharedSecret, contexts, sameHost,
				advertisedAddresses, ioMode, ioModeRequired);
	}

	/** @return a copy with other same-host settings */
	public TransportSettings withSameHost(ShmConfig config) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout,
				preferNative, socketBufferSize, eventLoopThreads, sharedSecret, tls, config, advertisedAddresses, ioMode,
				ioModeRequired);
	}

	/** @return a copy whose listeners also answer to {@code addresses} (each non-null; copied) */
	public TransportSettings withAdvertisedAddresses(List<HostPort> addresses) {
		return new TransportSettings(heartbeatInterval, maxFrameLength, writeBufferLow, writeBufferHigh, connectTimeout,
				preferNative, socketBufferSize, eventLoopThreads, sharedSecret, tls, sameHost, addresses, ioMode,
				ioModeRequired);
	}

	/**
	 * @return how long a connection may take from TCP connect to a completed kvferry handshake (TLS, preface, shared
	 *         secret) before it is closed: the connect timeout plus two heartbeat intervals
	 */
	public Duration handshakeTimeout() {
		return connectTimeout.plus(deadPeerTimeout());
	}

	/** @return the heartbeat interval as the handshake announces it: whole milliseconds, rounded up */
	public int heartbeatMillis() {
		return (int) ((heartbeatInterval.toNanos() + 999_999) / 1_000_000);
	}

	/**
	 * @return how long a peer may stay silent before its connection is closed, until its handshake announced its own
	 *         interval: two of this side's heartbeat intervals
	 */
	public Duration deadPeerTimeout() {
		return heartbeatInterval.multipliedBy(2);
	}

	/** @return {@code d} for log lines and reasons: whole seconds as {@code "10 s"}, otherwise {@code "400 ms"} */
	public static String format(Duration d) {
		long millis = d.toMillis();
		return millis % 1000 == 0 ? (millis / 1000) + " s" : millis + " ms";
	}

	/**
	 * The TLS contexts of a transport: one for the connections it accepts, one for those it opens.
	 *
	 * @param server a server-side context (certificate and key; may require client certificates)
	 * @param client a client-side context (trusted certificates; may carry a client certificate)
	 */
	public record Tls(SslContext server, SslContext client) {

		public Tls {
			Objects.requireNonNull(server, "server");
			Objects.requireNonNull(client, "client");
			if (!server.isServer()) {
				throw new IllegalArgumentException("serverContext : a client context (expected: a server SslContext)");
			}
			if (!client.isClient()) {
				throw new IllegalArgumentException("clientContext : a server context (expected: a client SslContext)");
			}
		}
	}
}
