package io.kvferry.transport.synthetic;

import java.util.Objects;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import reactor.core.publisher.Mono;

/**
 * The transport a decode manager is given to reach a synthetic prefill instance: it connects to the instance's ranks
 * in-process, and nothing listens on it.
 */
final class SyntheticTransport implements KVTransport {

	private final SyntheticPrefill source;

	SyntheticTransport(SyntheticPrefill source) {
		this.source = source;
	}

	@Override
	public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
		return Mono.error(() -> new KVFerryException("a synthetic prefill's transport connects decode ranks to its "
				+ "own ranks only: it cannot listen at " + bindAddress));
	}

	@Override
	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		Objects.requireNonNull(remote, "remote");
		Objects.requireNonNull(handler, "handler");
		return Mono.fromSupplier(() -> source.connect(remote, handler));
	}

	@Override
	public String toString() {
		return "SyntheticTransport{" + source + '}';
	}
}
