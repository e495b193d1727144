package io.kvferry.internal;

import java.util.Queue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import reactor.core.publisher.BufferOverflowStrategy;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.util.concurrent.Queues;

/**
 * A hot stream many threads emit into without a lock and without ever running a subscriber's code: an emission joins
 * a queue that whichever emitter finds it idle drains into the subscribers' own buffers, and each subscriber is called
 * on its own worker of the callback scheduler. A subscriber that blocks or re-enters the library therefore holds up
 * only itself, never an emitter (an event loop, a room's monitor).
 *
 * <ul>
 * <li>Without subscriber: items are not kept (hot).</li>
 * <li>Backpressure: each subscriber has a buffer of {@code bufferSize} (and up to {@value #HANDOFF} more on their way to
 * its worker); when it is full the oldest buffered item is dropped and handed to the overflow handler, which must not
 * block and must not emit into this stream.</li>
 * <li>Replay: none.</li>
 * </ul>
 *
 * @param <T> the items
 */
final class HotStream<T> {

	/** Items handed from a subscriber's buffer to its worker at a time; they are held on top of the buffer. */
	static final int HANDOFF = 32;

	private static final Object COMPLETE = new Object();

	// Emissions are serialized by the drain below, so the sink needs no detection of concurrent producers.
	private final Sinks.Many<T> sink = Sinks.unsafe().many().multicast().directBestEffort();
	private final Queue<Object> queue = Queues.unboundedMultiproducer().get();
	private final AtomicInteger wip = new AtomicInteger();
	private final Scheduler callbacks;
	private final int bufferSize;
	private final Consumer<? super T> onOverflow;

	/**
	 * @param callbacks where subscribers are called
	 * @param bufferSize per-subscriber buffer
	 * @param onOverflow gets each item a full buffer drops
	 */
	HotStream(Scheduler callbacks, int bufferSize, Consumer<? super T> onOverflow) {
		this.callbacks = callbacks;
		this.bufferSize = bufferSize;
		this.onOverflow = onOverflow;
	}

	void emit(T item) {
		queue.offer(item);
		drain();
	}

	void complete() {
		queue.offer(COMPLETE);
		drain();
	}

	@SuppressWarnings("unchecked")
	private void drain() {
		if (wip.getAndIncrement() != 0) {
			return;
		}
		int missed = 1;
		do {
			Object item;
			while ((item = queue.poll()) != null) {
				if (item == COMPLETE) {
					sink.tryEmitComplete();
				}
				else {
					sink.tryEmitNext((T) item);
				}
			}
			missed = wip.addAndGet(-missed);
		}
		while (missed != 0);
	}

	Flux<T> flux() {
		return sink.asFlux().onBackpressureBuffer(bufferSize, onOverflow, BufferOverflowStrategy.DROP_OLDEST)
				.publishOn(callbacks, HANDOFF);
	}
}
