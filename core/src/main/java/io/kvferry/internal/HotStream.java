package io.kvferry.internal;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.BufferOverflowStrategy;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/**
 * A hot stream many threads emit into: emissions are serialized here, never slowed by subscribers. Each subscriber
 * gets its own buffer of {@code bufferSize}; one that does not keep up loses its oldest buffered items.
 *
 * @param <T> the items
 */
final class HotStream<T> {

	private static final Logger log = LoggerFactory.getLogger(HotStream.class);

	private final Sinks.Many<T> sink = Sinks.many().multicast().directBestEffort();
	private final String name;
	private final int bufferSize;

	HotStream(String name, int bufferSize) {
		this.name = name;
		this.bufferSize = bufferSize;
	}

	void emit(T item) {
		synchronized (sink) {
			sink.tryEmitNext(item);
		}
	}

	void complete() {
		synchronized (sink) {
			sink.tryEmitComplete();
		}
	}

	Flux<T> flux() {
		return sink.asFlux().onBackpressureBuffer(bufferSize,
				dropped -> log.debug("[{}] slow subscriber dropped {}", name, dropped),
				BufferOverflowStrategy.DROP_OLDEST);
	}
}
