package io.kvferry.transport.netty.internal;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectFailure;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.netty.bootstrap.AbstractBootstrap;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.util.NetUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The channels of one transport: binds its listeners and opens its connections, each with the transport's socket
 * options and the kvferry pipeline ({@link NettyKVConnection#install}), and closes all of them, and every one that
 * comes later, once the transport is disposed. Host names are resolved off the event loop; failures name the address.
 * Thread-safe.
 */
public final class TransportChannels {

	private static final Logger log = LoggerFactory.getLogger(TransportChannels.class);

	// Reads of up to 128 KiB: large enough for few syscalls, small enough that the read buffer is still in cache when
	// the sink copies it into registered memory (measured: 128 KiB beats 64 KiB, 256 KiB and 1 MiB on loopback). Large
	// contiguous payloads skip this buffer: they are read straight into registered memory (LandingRecvByteBufAllocator).
	private static final int MAX_READ_BUFFER = 128 * 1024;

	// The classic pooled allocator: per-thread caches and no lock an event loop could park on (Netty 4.2's default
	// adaptive allocator may park on a StampedLock when two loops grow it at once, which BlockHound reports).
	private static final ByteBufAllocator ALLOCATOR = PooledByteBufAllocator.DEFAULT;

	private final TransportSettings settings;
	private final ConnectionRegistry connections = new ConnectionRegistry();
	private final Set<NettyListener> listeners = ConcurrentHashMap.newKeySet();
	private final AtomicLong sameHostOpened = new AtomicLong();
	private volatile boolean closed;

	/** @param settings the transport's settings */
	public TransportChannels(TransportSettings settings) {
		this.settings = settings;
	}

	/**
	 * @param res the transport's event loops
	 * @param bindAddress where to bind; port 0 picks a free port
	 * @param acceptor gives each accepted connection its handler once its handshake completed
	 * @return the listener once bound, or an error naming the address
	 */
	public Mono<KVTransport.Listener> listen(EventLoopResources res, HostPort bindAddress,
			Function<KVConnection, ConnectionHandler> acceptor) {
		return resolve(bindAddress).flatMap(address -> bind(res, bindAddress, address, acceptor));
	}

	/**
	 * @param res the transport's event loops
	 * @param remote the listener's address
	 * @param handler the engine's side of the connection
	 * @return the connection once its handshake completed, or an error naming the address or the handshake's failure
	 */
	public Mono<KVConnection> connect(EventLoopResources res, HostPort remote, ConnectionHandler handler) {
		return resolve(remote).flatMap(address -> connect(res, remote, address, handler));
	}

	/**
	 * Stops every listener and closes every connection, and each bound or opened from now on, with {@code reason}.
	 *
	 * @return completes when every connection open now has closed
	 */
	public CompletableFuture<Void> closeAll(CloseReason reason) {
		closed = true;
		listeners.forEach(NettyListener::dispose);
		return connections.closeAll(reason);
	}

	/** The event loops ended: connections they left open are closed from here (see {@link ConnectionRegistry}). */
	public void loopsEnded() {
		connections.loopsEnded();
	}

	/** @return how many connections opened here moved their KV data through a same-host ring */
	public long sameHostOpened() {
		return sameHostOpened.get();
	}

	private Mono<KVTransport.Listener> bind(EventLoopResources res, HostPort bindAddress, InetSocketAddress address,
			Function<KVConnection, ConnectionHandler> acceptor) {
		return Mono.create(sink -> {
			ConnectionRegistry accepted = new ConnectionRegistry();
			ServerBootstrap bootstrap = new ServerBootstrap()
					.group(res.group())
					.channel(res.serverChannel())
					.option(ChannelOption.SO_REUSEADDR, true)
					.childOption(ChannelOption.TCP_NODELAY, true)
					.childOption(ChannelOption.SO_KEEPALIVE, true)
					.childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, waterMark())
					.childOption(ChannelOption.RECVBUF_ALLOCATOR, recvAllocator())
					.childOption(ChannelOption.ALLOCATOR, ALLOCATOR)
					.childHandler(new ChannelInitializer<Channel>() {
						@Override
						protected void initChannel(Channel ch) {
							NettyKVConnection connection =
									NettyKVConnection.install(ch, settings, null, acceptor, null);
							accepted.add(connection);
							connections.add(connection);
						}
					});
			if (settings.socketBufferSize() > 0) {
				// SO_RCVBUF on the listening socket so that accepted sockets negotiate a matching window.
				bootstrap.option(ChannelOption.SO_RCVBUF, settings.socketBufferSize())
						.childOption(ChannelOption.SO_SNDBUF, settings.socketBufferSize())
						.childOption(ChannelOption.SO_RCVBUF, settings.socketBufferSize());
			}
			AtomicBoolean cancelled = new AtomicBoolean();
			ChannelFuture bound = bootstrap.bind(address);
			sink.onCancel(() -> {
				cancelled.set(true);
				bound.channel().close();
			});
			bound.addListener((ChannelFuture f) -> {
				if (!f.isSuccess()) {
					sink.error(new KVFerryException("cannot listen on " + bindAddress + ": " + f.cause().getMessage(),
							f.cause()));
					return;
				}
				int port = ((InetSocketAddress) f.channel().localAddress()).getPort();
				HostPort boundAddress = new HostPort(bindAddress.host(), port);
				NettyListener listener = new NettyListener(f.channel(), boundAddress, accepted);
				listeners.add(listener);
				listener.onClose().addListener(x -> {
					listeners.remove(listener);
					listener.dispose();
				});
				// Checked after the add: closeAll either sees the listener or this sees that it ran.
				if (cancelled.get() || closed) {
					listener.dispose();
				}
				log.debug("[{}] listening on {} ({})", f.channel().id().asShortText(), listener.address(),
						res.ioMode().label());
				sink.success(listener);
			});
		});
	}

	private Mono<KVConnection> connect(EventLoopResources res, HostPort remote, InetSocketAddress address,
			ConnectionHandler handler) {
		return Mono.create(sink -> {
			Bootstrap bootstrap = new Bootstrap()
					.group(res.group())
					.channel(res.socketChannel())
					.option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) settings.connectTimeout().toMillis())
					.option(ChannelOption.TCP_NODELAY, true)
					.option(ChannelOption.SO_KEEPALIVE, true)
					.option(ChannelOption.WRITE_BUFFER_WATER_MARK, waterMark())
					.option(ChannelOption.RECVBUF_ALLOCATOR, recvAllocator())
					.option(ChannelOption.ALLOCATOR, ALLOCATOR)
					.handler(new ChannelInitializer<Channel>() {
						@Override
						protected void initChannel(Channel ch) {
							NettyKVConnection connection =
									NettyKVConnection.install(ch, settings, handler, null, remote);
							connections.add(connection);
							connection.handshakeFuture().addListener(f -> {
								if (f.isSuccess() && connection.sameHostActive()) {
									sameHostOpened.incrementAndGet();
								}
								if (f.isSuccess()) {
									sink.success(connection);
								}
								else {
									sink.error(f.cause());
								}
							});
						}
					});
			socketBuffers(bootstrap);
			ChannelFuture connected = bootstrap.connect(address);
			sink.onCancel(() -> connected.channel().close());
			connected.addListener((ChannelFuture f) -> {
				if (!f.isSuccess()) {
					sink.error(connectFailure(remote, f.cause()));
				}
			});
		});
	}

	private void socketBuffers(AbstractBootstrap<?, ?> bootstrap) {
		if (settings.socketBufferSize() > 0) {
			bootstrap.option(ChannelOption.SO_SNDBUF, settings.socketBufferSize())
					.option(ChannelOption.SO_RCVBUF, settings.socketBufferSize());
		}
	}

	/** Names what kept the connection from opening, and the address: never Netty's bare words for it. */
	private KVFerryException connectFailure(HostPort remote, Throwable cause) {
		ConnectFailure failure = ConnectFailure.of(cause);
		if (failure == ConnectFailure.TIMED_OUT) {
			return new KVFerryException("cannot connect within " + TransportSettings.format(settings.connectTimeout())
					+ ": " + failure.describe(remote.toString(), cause), cause);
		}
		if (failure != null) {
			return new KVFerryException("cannot connect: " + failure.describe(remote.toString(), cause), cause);
		}
		return new KVFerryException("cannot connect to " + remote + ": " + cause.getMessage(), cause);
	}

	private WriteBufferWaterMark waterMark() {
		return new WriteBufferWaterMark(settings.writeBufferLow(), settings.writeBufferHigh());
	}

	private static RecvByteBufAllocator recvAllocator() {
		return new AdaptiveRecvByteBufAllocator(64, 64 * 1024, MAX_READ_BUFFER);
	}

	/** Resolves off the event loop unless the host is an IP literal (a name lookup may block). */
	private static Mono<InetSocketAddress> resolve(HostPort hostPort) {
		String host = hostPort.host();
		if (NetUtil.isValidIpV4Address(host) || NetUtil.isValidIpV6Address(host)) {
			InetAddress literal = NetUtil.createInetAddressFromIpAddressString(host);
			return Mono.just(new InetSocketAddress(literal, hostPort.port()));
		}
		return Mono.fromCallable(() -> {
			InetSocketAddress address = new InetSocketAddress(host, hostPort.port());
			if (address.isUnresolved()) {
				UnknownHostException unresolved = new UnknownHostException();
				throw new KVFerryException("cannot connect: " + ConnectFailure.UNKNOWN_HOST.describe(hostPort.toString(),
						unresolved), unresolved);
			}
			return address;
		}).subscribeOn(Schedulers.boundedElastic());
	}
}
