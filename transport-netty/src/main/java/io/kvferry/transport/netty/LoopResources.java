package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.KVFerryException;
import io.kvferry.transport.netty.internal.EventLoopResources;
import io.netty.channel.EventLoopGroup;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A set of event loops that several transports share, as Reactor Netty's {@code LoopResources} is shared by its
 * clients and servers: one Netty event loop group and the channel classes that go with it (Epoll when preferred and
 * available, NIO otherwise; or io_uring, {@link #create(String, int, IoMode, boolean)}). Whoever creates it disposes it; a transport given it
 * ({@link NettyKVTransport#loopResources}) runs its listeners and connections on it and never shuts it down.
 *
 * <pre>{@code
 * LoopResources loops = LoopResources.create("kvferry", 4);
 * NettyKVTransport prefill = NettyKVTransport.create().loopResources(loops);
 * NettyKVTransport decode = NettyKVTransport.create().loopResources(loops).sharedSecret(secret);
 * // Reactor Netty clients can run on the same threads: HttpClient.create().runOn(loops.group())
 * ...
 * prefill.disposeNow(timeout);
 * decode.disposeNow(timeout);
 * loops.disposeLater().block(timeout);
 * }</pre>
 *
 * <p>The threads are daemons named {@code name-N-M} and start when the first channel is registered on them. Thread-safe.
 */
public final class LoopResources implements Disposable {

	/** How long a disposal waits for tasks already queued on the loops before it stops them. */
	private static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(2);

	private final String name;
	private final EventLoopResources loops;
	private final AtomicBoolean disposed = new AtomicBoolean();

	private LoopResources(String name, EventLoopResources loops) {
		this.name = name;
		this.loops = loops;
	}

	/**
	 * @param name prefix of the threads' names
	 * @param threads event loop threads, &ge; 1
	 * @return new loops, Epoll when available, owned by the caller
	 */
	public static LoopResources create(String name, int threads) {
		return create(name, threads, true);
	}

	/**
	 * @param name prefix of the threads' names
	 * @param threads event loop threads, &ge; 1
	 * @param preferNative whether to use Epoll when it is available; NIO otherwise
	 * @return new loops, owned by the caller
	 */
	public static LoopResources create(String name, int threads, boolean preferNative) {
		Objects.requireNonNull(name, "name");
		if (name.isBlank()) {
			throw new IllegalArgumentException("name : blank (expected: a thread name prefix)");
		}
		if (threads < 1) {
			throw new IllegalArgumentException("threads : " + threads + " (expected: >= 1)");
		}
		return create(name, threads, preferNative ? IoMode.EPOLL : IoMode.NIO, false);
	}

	/**
	 * @param name prefix of the threads' names
	 * @param threads event loop threads, &ge; 1
	 * @param mode how the loops do socket I/O; unavailable here, it falls back (io_uring to Epoll, Epoll to NIO) with
	 *        the reason logged, unless required
	 * @param required whether an unavailable mode is an error instead of a fall-back
	 * @return new loops, owned by the caller
	 * @throws io.kvferry.KVFerryException naming the reason when {@code mode} is required and unavailable here
	 */
	public static LoopResources create(String name, int threads, IoMode mode, boolean required) {
		Objects.requireNonNull(name, "name");
		Objects.requireNonNull(mode, "mode");
		if (name.isBlank()) {
			throw new IllegalArgumentException("name : blank (expected: a thread name prefix)");
		}
		if (threads < 1) {
			throw new IllegalArgumentException("threads : " + threads + " (expected: >= 1)");
		}
		return new LoopResources(name, EventLoopResources.create(name, threads, mode, required));
	}

	/** @return the event loop group, for other Netty or Reactor Netty parts that should share these threads */
	public EventLoopGroup group() {
		return loops.group();
	}

	/** @return whether the loops are native (Epoll or io_uring), else NIO */
	public boolean isNative() {
		return loops.ioMode() != IoMode.NIO;
	}

	/** @return the loops' I/O mode (after any fall-back) */
	public IoMode ioMode() {
		return loops.ioMode();
	}

	/** @return the loops for a transport, which uses them without shutting them down; errors once disposed */
	EventLoopResources lend() {
		if (disposed.get()) {
			throw new KVFerryException("loop resources " + name + " disposed");
		}
		return loops.borrowed();
	}

	/**
	 * Shuts the loops down without waiting: tasks already queued run (for up to 2 s), then the threads end. Channels
	 * still open on them are closed by Netty without ceremony: dispose the transports first. Idempotent.
	 */
	@Override
	public void dispose() {
		if (disposed.compareAndSet(false, true)) {
			loops.group().shutdownGracefully(0, SHUTDOWN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
		}
	}

	/** @return on subscription, {@link #dispose()}; completes once every thread ended */
	public Mono<Void> disposeLater() {
		return Mono.defer(() -> {
			dispose();
			return Mono.<Void>create(sink -> loops.group().terminationFuture().addListener(f -> sink.success()));
		});
	}

	@Override
	public boolean isDisposed() {
		return disposed.get();
	}

	@Override
	public String toString() {
		return "LoopResources{" + name + ", " + ioMode().label() + (isDisposed() ? ", disposed" : "")
				+ "}";
	}
}
