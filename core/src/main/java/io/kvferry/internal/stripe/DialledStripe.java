package io.kvferry.internal.stripe;

import io.kvferry.ProtocolException;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.ScatterHeader;
import reactor.core.publisher.Sinks;

/**
 * One stripe of a {@link DialledConnection}: its own transport connection, read on its own thread. Fences and abort
 * acknowledgements are the connection's; control messages go to the session from stripe 0 only (a drain notice from
 * any); a further stripe's only other business is to hear that prefill attached it to the session.
 */
final class DialledStripe implements ConnectionHandler {

	private final DialledConnection connection;
	final int index;
	// Completes when prefill attached this stripe to the session (stripe 0: never needed).
	final Sinks.Empty<Void> joined = Sinks.empty();
	// Guarded by the connection: whether this stripe's connection closed.
	boolean ended;

	DialledStripe(DialledConnection connection, int index) {
		this.connection = connection;
		this.index = index;
	}

	@Override
	public void onMessage(KVConnection c, KVMessage message) {
		if (message instanceof KVMessage.Fence fence) {
			connection.onFence(this, fence);
		}
		else if (message instanceof KVMessage.AbortAck ack) {
			connection.answered(ack.room(), index);
		}
		else if (index == 0 || message instanceof KVMessage.Draining) {
			if (message instanceof KVMessage.Status status) {
				// Whatever the rank says of a room, it sends nothing more for it on stripe 0 after: an answer to its abort.
				connection.answered(status.room(), 0);
			}
			if (!connection.peer.onMessage(message)) {
				c.close("unexpected " + message.getClass().getSimpleName() + " from prefill");
			}
		}
		else if (message instanceof KVMessage.Joined j && j.stripe() == index) {
			joined.tryEmitEmpty();
		}
		else if (message instanceof KVMessage.Reject reject) {
			joined.tryEmitError(new ProtocolException(reject.reason()));
		}
		else {
			c.close("unexpected " + message + " from prefill on stripe " + index);
		}
	}

	@Override
	public PayloadSink onData(KVConnection c, DataHeader h) {
		return connection.onData(this, h);
	}

	@Override
	public void onScatter(KVConnection c, ScatterHeader h, PayloadSink[] sinks) {
		connection.onScatter(this, h, sinks);
	}

	@Override
	public void onClose(KVConnection c, CloseReason reason) {
		connection.stripeClosed(this, c, reason);
	}

	@Override
	public String toString() {
		return "stripe " + index + " of prefill rank " + connection.endpointName();
	}
}
