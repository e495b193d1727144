package io.kvferry.examples.snippets;

import java.time.Duration;
import java.util.function.BiConsumer;

import io.kvferry.KVOverloadException;
import io.kvferry.KVReceiver;
import reactor.core.publisher.Mono;

/**
 * A router's answer to a room refused as overloaded: the room moved nothing, so it is sent again, to another rank at
 * once or to the same one after the refusing rank's hint.
 */
public final class OverloadRetry {

	private OverloadRetry() {
	}

	/**
	 * @param receiver a room's receiver
	 * @param retryLater what the router does with a refused room: the room and how long to wait
	 * @return the room's completion, which completes empty once the refused room was handed back to the router
	 */
	public static Mono<Void> completion(KVReceiver receiver, BiConsumer<Long, Duration> retryLater) {
		// tag::overload-retry[]
		return receiver.completion().onErrorResume(KVOverloadException.class, e -> {
			retryLater.accept(e.room(), e.retryAfter());    // or another decode rank at once
			return Mono.empty();
		});
		// end::overload-retry[]
	}
}
