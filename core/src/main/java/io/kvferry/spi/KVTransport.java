package io.kvferry.spi;

import java.util.function.Function;

import io.kvferry.HostPort;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Moves control messages and KV bytes between ranks. Prefill managers {@link #listen}, decode managers
 * {@link #connect}. Both methods are lazy.
 */
public interface KVTransport {

	/**
	 * Listens for decode connections.
	 *
	 * @param bindAddress where to listen (port 0 picks a free one)
	 * @param acceptor gives each accepted connection its handler
	 * @return the listener once bound
	 */
	Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor);

	/**
	 * Connects to a prefill rank.
	 *
	 * @param remote the prefill rank's endpoint
	 * @param handler the engine's side of the connection
	 * @return the connection once established
	 */
	Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler);

	/** A bound listener; disposing it stops accepting and closes its connections. */
	interface Listener extends Disposable {
		/** @return the bound address (with the real port when 0 was asked) */
		HostPort address();
	}
}
