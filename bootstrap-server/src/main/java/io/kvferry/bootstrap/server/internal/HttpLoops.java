package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import reactor.core.publisher.Mono;
import reactor.netty.resources.LoopResources;

/**
 * Event loops for the bootstrap server's HTTP, and for the HTTP clients it makes: Epoll where available, else NIO,
 * never io_uring. Reactor Netty's own loops take io_uring whenever Netty's io_uring transport is on the class path
 * (an engine may add it for its KV transport), and no setting keeps them on Epoll short of turning every native
 * transport off; control-plane HTTP gains nothing from io_uring, so these loops pick their transport themselves, and
 * Reactor Netty picks the channels that match the group.
 */
public final class HttpLoops implements LoopResources {

	private final EventLoopGroup group;
	// Accepts connections; the group itself where there is none of its own.
	private final EventLoopGroup select;

	private HttpLoops(EventLoopGroup group, EventLoopGroup select) {
		this.group = group;
		this.select = select;
	}

	/**
	 * @param prefix thread name prefix; the transport is appended ({@code -epoll} or {@code -nio}), and
	 *        {@code -select} for the thread that accepts connections
	 * @param threads event loop threads (daemon) that serve connections; one more accepts them
	 * @return new loops, disposed by whoever created them
	 */
	public static HttpLoops create(String prefix, int threads) {
		return new HttpLoops(group(prefix, threads), group(prefix + "-select", 1));
	}

	private static EventLoopGroup group(String prefix, int threads) {
		boolean epoll = Epoll.isAvailable();
		IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
		return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(prefix + (epoll ? "-epoll" : "-nio"),
				true), io);
	}

	/** @return one loop thread shared by the HTTP clients of this JVM's bootstrap servers, made on first use */
	public static HttpLoops shared() {
		return Shared.LOOPS;
	}

	@Override
	public EventLoopGroup onServer(boolean useNative) {
		return group;
	}

	@Override
	public EventLoopGroup onServerSelect(boolean useNative) {
		return select;
	}

	@Override
	public boolean daemon() {
		return true;
	}

	@Override
	public boolean isDisposed() {
		return group.isShuttingDown();
	}

	@Override
	public Mono<Void> disposeLater(Duration quietPeriod, Duration timeout) {
		return Mono.when(shutDown(select, quietPeriod, timeout), shutDown(group, quietPeriod, timeout));
	}

	private static Mono<Void> shutDown(EventLoopGroup g, Duration quietPeriod, Duration timeout) {
		return Mono.create(sink -> g.shutdownGracefully(quietPeriod.toMillis(), timeout.toMillis(),
				TimeUnit.MILLISECONDS).addListener(f -> sink.success()));
	}

	/** Made when first asked for, never disposed: daemon threads, as Reactor Netty's global loops are. */
	private static final class Shared {
		static final EventLoopGroup GROUP = group("kvferry-http-probe", 1);
		static final HttpLoops LOOPS = new HttpLoops(GROUP, GROUP);
	}
}
