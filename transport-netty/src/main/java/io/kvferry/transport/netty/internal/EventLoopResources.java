package io.kvferry.transport.netty.internal;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.kvferry.KVFerryException;
import io.kvferry.transport.netty.IoMode;
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
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ImmediateEventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The event loop group of one transport and the channel classes that go with it: the {@link IoMode} asked for when it
 * is available here, else the next one (io_uring, then Epoll, then NIO) with the reason logged, or an error when the
 * mode was required. Threads are daemons named {@code kvferry-transport-N-M}. A group the caller gave
 * ({@link #of}) is used as it is and never shut down here.
 */
public final class EventLoopResources {

	private static final Logger log = LoggerFactory.getLogger(EventLoopResources.class);

	private final EventLoopGroup group;
	private final IoMode mode;
	private final boolean owned;

	private EventLoopResources(EventLoopGroup group, IoMode mode, boolean owned) {
		this.group = group;
		this.mode = mode;
		this.owned = owned;
	}

	/**
	 * @param group the caller's group, which keeps it
	 * @return resources over it: io_uring or Epoll channels for an io_uring or Epoll group, NIO channels otherwise
	 * @throws IllegalArgumentException when the group can run none of them
	 */
	public static EventLoopResources of(EventLoopGroup group) {
		if (!(group instanceof IoEventLoopGroup io)) {
			throw new IllegalArgumentException("event loop group : " + group.getClass().getName()
					+ " (expected: an IoEventLoopGroup with an io_uring, Epoll or NIO handler, such as "
					+ "MultiThreadIoEventLoopGroup)");
		}
		IoMode mode;
		if (Uring.isGroup(io)) {
			mode = IoMode.IO_URING;
		}
		else if (Epoll.isAvailable() && io.isIoType(EpollIoHandler.class)) {
			mode = IoMode.EPOLL;
		}
		else if (io.isIoType(NioIoHandler.class)) {
			mode = IoMode.NIO;
		}
		else {
			throw new IllegalArgumentException("event loop group : " + group + " (expected: an io_uring, Epoll or NIO "
					+ "I/O handler)");
		}
		return new EventLoopResources(group, mode, false);
	}

	/** @return a new group sized and typed by {@code settings} */
	public static EventLoopResources create(TransportSettings settings) {
		return create("kvferry-transport", settings.eventLoopThreads(), settings.ioMode(), settings.ioModeRequired());
	}

	/**
	 * @param name prefix of the daemon threads' names ({@code name-N-M})
	 * @param threads event loop threads, &ge; 1
	 * @param preferNative whether to use Epoll when it is available; NIO otherwise
	 * @return a new group, owned by the result
	 */
	public static EventLoopResources create(String name, int threads, boolean preferNative) {
		return create(name, threads, preferNative ? IoMode.EPOLL : IoMode.NIO, false);
	}

	/**
	 * @param name prefix of the daemon threads' names ({@code name-N-M})
	 * @param threads event loop threads, &ge; 1
	 * @param wanted the I/O mode asked for
	 * @param required whether an unavailable mode is an error instead of a fall-back
	 * @return a new group, owned by the result
	 * @throws KVFerryException naming the reason when {@code wanted} is required and unavailable here
	 */
	public static EventLoopResources create(String name, int threads, IoMode wanted, boolean required) {
		IoMode mode = available(wanted, required);
		IoHandlerFactory factory = switch (mode) {
			case IO_URING -> Uring.factory();
			case EPOLL -> EpollIoHandler.newFactory();
			case NIO -> NioIoHandler.newFactory();
		};
		EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true), factory);
		return new EventLoopResources(group, mode, true);
	}

	/** @return {@code wanted} when it is available here, else the mode it falls back to (the reason logged) */
	static IoMode available(IoMode wanted, boolean required) {
		if (wanted == IoMode.IO_URING) {
			String why = Uring.unavailability();
			if (why == null) {
				return IoMode.IO_URING;
			}
			if (required) {
				throw new KVFerryException("io_uring was required but is unavailable here: " + why);
			}
			IoMode fallback = Epoll.isAvailable() ? IoMode.EPOLL : IoMode.NIO;
			log.warn("io_uring unavailable, using {}: {}", fallback.label(), why);
			return fallback;
		}
		if (wanted == IoMode.EPOLL) {
			if (Epoll.isAvailable()) {
				return IoMode.EPOLL;
			}
			String why = String.valueOf(Epoll.unavailabilityCause());
			if (required) {
				throw new KVFerryException("epoll was required but is unavailable here: " + why);
			}
			log.debug("Epoll unavailable, using NIO: {}", why);
		}
		return IoMode.NIO;
	}

	/** @return the same loops for a user that must not shut them down (a transport given shared loops) */
	public EventLoopResources borrowed() {
		return owned ? new EventLoopResources(group, mode, false) : this;
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
		return mode == IoMode.EPOLL;
	}

	/** @return the group's I/O mode (the one asked for, or the one it fell back to) */
	public IoMode ioMode() {
		return mode;
	}

	/** @return the client channel class for this group */
	public Class<? extends Channel> socketChannel() {
		return switch (mode) {
			case IO_URING -> Uring.socketChannel();
			case EPOLL -> EpollSocketChannel.class;
			case NIO -> LandingNioSocketChannel.class;
		};
	}

	/** @return the server channel class for this group */
	public Class<? extends ServerChannel> serverChannel() {
		return switch (mode) {
			case IO_URING -> Uring.serverChannel();
			case EPOLL -> EpollServerSocketChannel.class;
			case NIO -> LandingNioServerSocketChannel.class;
		};
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

	/**
	 * Netty's io_uring classes, touched only here: the io_uring jars are an optional dependency, so this class is loaded
	 * only once io_uring was asked for or a group is checked for it, and a missing jar reads as unavailable.
	 */
	private static final class Uring {

		private Uring() {
		}

		/** @return null when io_uring is available here, else why not */
		static String unavailability() {
			try {
				return IoUring.isAvailable() ? null
						: String.valueOf(IoUring.unavailabilityCause());
			}
			catch (LinkageError e) {
				return "netty-transport-native-io_uring (linux-x86_64 or linux-aarch_64) is not on the class path: " + e;
			}
		}

		static boolean isGroup(IoEventLoopGroup group) {
			return unavailability() == null && group.isIoType(IoUringIoHandler.class);
		}

		static IoHandlerFactory factory() {
			return IoUringIoHandler.newFactory();
		}

		static Class<? extends Channel> socketChannel() {
			return IoUringSocketChannel.class;
		}

		static Class<? extends ServerChannel> serverChannel() {
			return IoUringServerSocketChannel.class;
		}
	}
}
