package io.kvferry.spi;

import java.util.List;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.MemoryRegion;
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

	/**
	 * Registers a rank's memory before the rank listens or connects: a manager calls it once as it starts, with every
	 * KV, aux and state region of its {@link io.kvferry.KVArgs}, and disposes of what it returned once it closed (no
	 * connection reads or writes the regions any more). A transport that moves bytes one-sided registers each region
	 * with its network here, once (not per room), so that it can hand peers keys for them; a slow registration costs
	 * the manager's start, not a room.
	 *
	 * <p>The default registers nothing and accepts host memory only: a transport that reads and writes regions through
	 * native addresses (TCP, a shared-memory ring, in-process) refuses a device region here, naming it, so that a rank
	 * whose KV lives on a GPU fails to start instead of faulting on its first byte.
	 *
	 * @param regions the rank's regions
	 * @return completes with a handle whose disposal deregisters them; errors with a {@link KVFerryException} naming
	 *         the first region the transport cannot move
	 */
	default Mono<Disposable> register(List<MemoryRegion> regions) {
		return Mono.fromCallable(() -> {
			for (MemoryRegion r : regions) {
				if (!r.kind().isHost()) {
					throw new KVFerryException(getClass().getSimpleName() + " moves host memory only: " + r + " is "
							+ r.kind() + " memory (device memory needs a transport that reaches it, such as UCX "
							+ "built with CUDA support)");
				}
			}
			return () -> {
			};
		});
	}

	/** A bound listener; disposing it stops accepting and closes its connections. */
	interface Listener extends Disposable {
		/** @return the bound address (with the real port when 0 was asked) */
		HostPort address();
	}
}
