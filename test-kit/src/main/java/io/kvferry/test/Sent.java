package io.kvferry.test;

import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/** Sends a message at once, and keeps what became of it for a test to look at later. */
public final class Sent {

	private Sent() {
	}

	/** @return the outcome of {@code message}, queued now: completes when written, errors when not */
	public static Mono<Void> now(KVConnection connection, KVMessage message) {
		return now(connection, message, SendGate.OPEN);
	}

	/** @return the outcome of {@code message}, queued now behind {@code gate} */
	public static Mono<Void> now(KVConnection connection, KVMessage message, SendGate gate) {
		Sinks.Empty<Void> outcome = Sinks.empty();
		connection.send(message, gate, new SendListener() {
			@Override
			public void written() {
				outcome.tryEmitEmpty();
			}

			@Override
			public void failed(Throwable cause) {
				outcome.tryEmitError(cause);
			}
		});
		return outcome.asMono();
	}
}
