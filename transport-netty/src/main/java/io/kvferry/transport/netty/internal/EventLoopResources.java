package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ImmediateEventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The event loop group of one transport and the channel classes that go with it: Epoll when it is preferred and
 * available, NIO otherwise. Threads are daemons named {@code kvferry-transport-N-M}. A group the caller gave
 * ({@link #of}) is used as it is and never shut down here.
 */
public final class EventLoopResources {

	private static final Logger log = LoggerFactory.getLogger(EventLoopResources.class);

	private final EventLoopGroup group;
	private final boolean epoll;
	private final boolean owned;

	private EventLoopResources(EventLoopGroup group, boolean epoll, boolean owned) {
		this.group = group;
		this.epoll = epoll;
		this.owned = owned;
	}

	/**
	 * @param group the caller's group, which keeps it
	 * @return resources over it: Epoll channels when it is an Epoll group, NIO channels otherwise
	 * @throws IllegalArgumentException when the group can run neither
	 */
	public static EventLoopResources of(EventLoopGroup group) {
		if (!(group instanceof IoEventLoopGroup io)) {
			throw new IllegalArgumentException("event loop group : " + group.getClass().getName()
					+ " (expected: an IoEventLoopGroup with an Epoll or NIO handler, such as MultiThreadIoEventLoopGroup)");
		}
		boolean epoll = Epoll.isAvailable() && io.isIoType(EpollIoHandler.class);
		if (!epoll && !io.isIoType(NioIoHandler.class)) {
			throw new IllegalArgumentException("event loop group : " + group + " (expected: an Epoll or NIO I/O "
					+ "handler)");
		}
		return new EventLoopResources(group, epoll, false);
	}

	/** @return a new group sized and typed by {@code settings} */
	public static EventLoopResources create(TransportSettings settings) {
		return create("kvferry-transport", settings.eventLoopThreads(), settings.preferNative());
	}

	/**
	 * @param name prefix of the daemon threads' names ({@code name-N-M})
	 * @param threads event loop threads, &ge; 1
	 * @param preferNative whether to use Epoll when it is available; NIO otherwise
	 * @return a new group, owned by the result
	 */
	public static EventLoopResources create(String name, int threads, boolean preferNative) {
		boolean epoll = preferNative && Epoll.isAvailable();
		if (preferNative && !epoll) {
			log.debug("Epoll unavailable, using NIO: {}", String.valueOf(Epoll.unavailabilityCause()));
		}
		IoHandlerFactory factory = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
		EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true), factory);
		return new EventLoopResources(group, epoll, true);
	}

	/** @return the same loops for a user that must not shut them down (a transport given shared loops) */
	public EventLoopResources borrowed() {
		return owned ? new EventLoopResources(group, epoll, false) : this;
	}

	/** @return the group */
	public EventLoopGroup group() {
		return group;
	}

	/** @return whether this transport made the group (and shuts it down) */
	public boolean isOwned() {
		return owned;
	}

	/** @return whether the group is Epoll */
	public boolean isEpoll() {
		return epoll;
	}

	/** @return the client channel class for this group */
	public Class<? extends Channel> socketChannel() {
		return epoll ? EpollSocketChannel.class : NioSocketChannel.class;
	}

	/** @return the server channel class for this group */
	public Class<? extends ServerChannel> serverChannel() {
		return epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
	}

	/**
	 * Shuts the group down without waiting, when this transport made it.
	 *
	 * @param timeout upper bound of the shutdown
	 * @return completes when every thread ended
	 */
	public Future<?> shutdown(Duration timeout) {
		if (!owned) {
			return ImmediateEventExecutor.INSTANCE.newSucceededFuture(null);
		}
		return group.shutdownGracefully(0, timeout.toMillis(), TimeUnit.MILLISECONDS);
	}
}
