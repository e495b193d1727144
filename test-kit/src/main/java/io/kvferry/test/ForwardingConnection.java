package io.kvferry.test;

import io.kvferry.HostPort;
import io.kvferry.RoomPath;
import io.kvferry.spi.Block;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import reactor.core.publisher.Mono;

/**
 * A connection that hands everything to another one, for tests that watch or change a little of what a manager sends:
 * override the one method concerned.
 *
 * <p>Data reaches the delegate only through {@link #send(Block)}: the variant with a listener calls it and answers
 * {@code written} at once. So a subclass that watches or changes data sees all of it by overriding that one, and a
 * sender over it queues each room's blocks without waiting for the transport (no window between rooms).
 */
public class ForwardingConnection implements KVConnection {

	protected final KVConnection delegate;

	/** @param delegate the connection that does the work */
	public ForwardingConnection(KVConnection delegate) {
		this.delegate = delegate;
	}

	@Override
	public String id() {
		return delegate.id();
	}

	@Override
	public HostPort remoteAddress() {
		return delegate.remoteAddress();
	}

	@Override
	public void send(KVMessage message, SendGate gate, SendListener listener) {
		delegate.send(message, gate, listener);
	}

	@Override
	public void send(Block block) {
		delegate.send(block);
	}

	@Override
	public void send(Block block, SendListener listener) {
		send(block);
		listener.written();
	}

	@Override
	public RoomPath path() {
		return delegate.path();
	}

	@Override
	public boolean isActive() {
		return delegate.isActive();
	}

	@Override
	public void close(String reason) {
		delegate.close(reason);
	}

	@Override
	public Mono<Void> onClose() {
		return delegate.onClose();
	}
}
