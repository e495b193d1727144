package io.kvferry.transport.netty.it;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

import io.kvferry.HostPort;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVTransport;
import io.kvferry.transport.netty.internal.NettyKVConnection;
import reactor.core.publisher.Mono;

/**
 * A {@link KVTransport} that passes everything to another one and remembers the connections its listeners accepted
 * (the prefill side of each connection), so a test can watch what the transport holds for them.
 */
final class RecordingTransport implements KVTransport {

	private final KVTransport delegate;
	private final List<KVConnection> accepted = new CopyOnWriteArrayList<>();

	RecordingTransport(KVTransport delegate) {
		this.delegate = Objects.requireNonNull(delegate, "delegate");
	}

	@Override
	public Mono<Listener> listen(HostPort bindAddress, Function<KVConnection, ConnectionHandler> acceptor) {
		return delegate.listen(bindAddress, connection -> {
			accepted.add(connection);
			return acceptor.apply(connection);
		});
	}

	@Override
	public Mono<KVConnection> connect(HostPort remote, ConnectionHandler handler) {
		return delegate.connect(remote, handler);
	}

	/** @return connections accepted so far, as Netty connections (the transport under test is Netty's) */
	List<NettyKVConnection> accepted() {
		return accepted.stream().map(NettyKVConnection.class::cast).toList();
	}
}
