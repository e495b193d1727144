package io.kvferry.cli;

import java.time.Duration;

import io.kvferry.KVFerryException;
import reactor.core.publisher.Mono;

/**
 * Waits, bounded, for a command's managers to close. A close that outlasts its bound fails with what did not close and
 * what it usually waits for, instead of Reactor's bare "Timeout on blocking read".
 */
final class Closing {

	/** How long a command waits for its managers to close, unless it says otherwise. */
	static final Duration TIMEOUT = Duration.ofSeconds(10);

	private Closing() {
	}

	/**
	 * @param close completes once everything is released
	 * @param within how long to wait
	 * @param what what closes, for the message ("the demo's managers")
	 * @throws KVFerryException when the close outlasts {@code within}; the close's own failure otherwise
	 */
	static void await(Mono<Void> close, Duration within, String what) {
		close.timeout(within, Mono.error(() -> new KVFerryException(what + " did not finish closing within "
				+ within.toMillis() + " ms: a connection still waits for its peer's answer to the close, or a read"
				+ " in flight for its completion"))).block();
	}
}
