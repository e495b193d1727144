package io.kvferry.transport.netty;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.kvferry.KVFerryException;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.LazyResource;
import io.kvferry.transport.netty.internal.EventLoopResources;
import io.kvferry.transport.netty.internal.TransportChannels;
import io.kvferry.transport.netty.internal.TransportSettings;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The event loops of one {@link NettyKVTransport} and its end: the caller's loops ({@code runOn},
 * {@code loopResources}) or loops of its own, either taken on the first listen or connect, and the disposal that
 * closes every channel of the transport before those loops stop (its own loops shut down, the caller's left running).
 * Thread-safe.
 */
final class TransportLoops {

	private final TransportSettings settings;
	// The caller's loops (runOn, loopResources), looked up on first use, or null: the transport makes and owns some.
	private final @Nullable Supplier<EventLoopResources> external;
	private final TransportChannels channels;
	// The loops in use, taken on the first listen or connect; kept once disposed, to stop them.
	private final LazyResource<EventLoopResources> resources = new LazyResource<>(null,
			() -> new KVFerryException("transport disposed"));
	private final Sinks.Empty<Void> disposedSignal = Sinks.empty();

	/**
	 * @param external the caller's loops, or {@code null} for loops of the transport's own
	 * @param settings the transport's settings (its own loops' I/O mode and threads, the close grace)
	 * @param channels the transport's listeners and connections, closed on disposal
	 */
	TransportLoops(@Nullable Supplier<EventLoopResources> external, TransportSettings settings,
			TransportChannels channels) {
		this.external = external;
		this.settings = settings;
		this.channels = channels;
	}

	/** @return the loops in use, or {@code null} before the first listen or connect */
	@Nullable
	EventLoopResources current() {
		return resources.peek();
	}

	/**
	 * @return the loops to listen or connect on: the ones in use, else the caller's or new ones of the transport's own
	 * @throws KVFerryException when the transport is disposed, or the caller's loops are shut down
	 */
	EventLoopResources acquire() {
		// Loops taken in a race another call won, or after the disposal, never ran a channel.
		EventLoopResources res = resources.get(() -> external != null ? external.get()
				: EventLoopResources.create(settings), lost -> lost.shutdown(Duration.ZERO));
		if (!res.isOwned() && res.group().isShuttingDown()) {
			// A channel registered on loops that are stopping is never bound nor connected: say so instead.
			throw new KVFerryException("the event loops this transport was given are shut down: " + res.group());
		}
		return res;
	}

	/**
	 * Disposes the transport without blocking: closes every listener and connection ("transport disposed"), then
	 * shuts its own loops down (the caller's are only left). Idempotent.
	 */
	void dispose() {
		if (!resources.dispose()) {
			return;
		}
		disposedSignal.tryEmitEmpty();
		CompletableFuture<Void> closed = channels.closeAll(new CloseReason(CloseReason.Kind.DISPOSED,
				"transport disposed"));
		EventLoopResources res = resources.peek();
		if (res != null) {
			// The loops stop once the connections closed: a loop that stops while a half-closed connection waits for
			// its peer's end closes the channel without channelInactive, and its handler and same-host rings would
			// never hear of it. A peer that does not answer is closed after the close grace, on the loop.
			Duration grace = settings.heartbeatInterval().plusSeconds(1);
			// The wait is bounded by a task on one of the loops, not by CompletableFuture's own timer: completing a
			// future with a timeout cancels that timer's task, from the event loop where the last channel closed,
			// which waits for the timer's queue lock.
			try {
				res.group().next().schedule(() -> closed.complete(null), grace.toMillis(), TimeUnit.MILLISECONDS);
			}
			catch (RejectedExecutionException e) {
				// A caller's group that is shutting down already: nothing will close on it any more.
				closed.complete(null);
			}
			closed.whenComplete((v, e) -> {
				res.shutdown(grace);
				if (res.isOwned()) {
					res.group().terminationFuture().addListener(f -> channels.loopsEnded());
				}
			});
		}
	}

	/**
	 * @return completes once the transport is disposed and its own loops' threads ended (at once after disposal when
	 *         it has none); never errors
	 */
	Mono<Void> onDispose() {
		return Mono.defer(() -> {
			if (!resources.isDisposed()) {
				return disposedSignal.asMono().then(onDispose());
			}
			EventLoopResources res = resources.peek();
			if (res == null || !res.isOwned()) {
				return Mono.empty();
			}
			return Mono.create(sink -> res.group().terminationFuture().addListener(f -> sink.success()));
		});
	}

	boolean isDisposed() {
		return resources.isDisposed();
	}
}
