package io.kvferry.internal;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import reactor.core.publisher.BufferOverflowStrategy;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
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
 * <li>Without subscriber: items are not kept (hot), unless the stream holds them for its next subscriber: then up to
 * {@code bufferSize} of them wait (older ones overflow) and go to the first subscriber that comes, before anything
 * emitted later. A stream of work that nobody may lose (a room's request, which can arrive while its engine is still
 * subscribing) holds; a stream of news does not.</li>
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
	// Items emitted while nobody subscribed, for the next subscriber; null when the stream does not hold. Only the
	// drain touches it, and the drain runs on one thread at a time.
	private final ArrayDeque<T> held;

	/**
	 * A stream that keeps nothing for subscribers to come.
	 *
	 * @param callbacks where subscribers are called
	 * @param bufferSize per-subscriber buffer
	 * @param onOverflow gets each item a full buffer drops
	 */
	HotStream(Scheduler callbacks, int bufferSize, Consumer<? super T> onOverflow) {
		this(callbacks, bufferSize, onOverflow, false);
	}

	/**
	 * @param callbacks where subscribers are called
	 * @param bufferSize per-subscriber buffer, and how many items wait for a subscriber when the stream holds them
	 * @param onOverflow gets each item a full buffer drops
	 * @param holdUntilSubscribed whether items emitted while nobody subscribed wait for the next subscriber
	 */
	HotStream(Scheduler callbacks, int bufferSize, Consumer<? super T> onOverflow, boolean holdUntilSubscribed) {
		this.callbacks = callbacks;
		this.bufferSize = bufferSize;
		this.onOverflow = onOverflow;
		this.held = holdUntilSubscribed ? new ArrayDeque<>() : null;
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
			boolean subscribed = sink.currentSubscriberCount() > 0;
			if (held != null && subscribed) {
				T waiting;
				while ((waiting = held.poll()) != null) {
					sink.tryEmitNext(waiting);
				}
			}
			Object item;
			while ((item = queue.poll()) != null) {
				if (item == COMPLETE) {
					sink.tryEmitComplete();
				}
				else if (held != null && !subscribed) {
					hold((T) item);
				}
				else {
					sink.tryEmitNext((T) item);
				}
			}
			missed = wip.addAndGet(-missed);
		}
		while (missed != 0);
	}

	private void hold(T item) {
		if (held.size() == bufferSize) {
			onOverflow.accept(held.poll());
		}
		held.add(item);
	}

	Flux<T> flux() {
		// The drain after subscribing hands the held items over: by then the sink counts the new subscriber.
		Flux<T> items = held == null ? sink.asFlux() : sink.asFlux().mergeWith(Mono.<T>fromRunnable(this::drain));
		return items.onBackpressureBuffer(bufferSize, onOverflow, BufferOverflowStrategy.DROP_OLDEST)
				.publishOn(callbacks, HANDOFF);
	}
}
