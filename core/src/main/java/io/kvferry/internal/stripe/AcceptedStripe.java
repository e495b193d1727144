package io.kvferry.internal.stripe;

import io.kvferry.ProtocolException;
import io.kvferry.spi.CloseReason;
import io.kvferry.spi.ConnectionHandler;
import io.kvferry.spi.DataHeader;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.PayloadSink;
import io.kvferry.spi.SendGate;
import io.kvferry.spi.SendListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One accepted connection: until its first message it belongs to no peer; a Hello makes it stripe 0 of a new
 * {@link StripedConnection}, a Join a further stripe of an existing one. Only stripe 0 passes messages on.
 */
final class AcceptedStripe implements ConnectionHandler {

	private static final Logger log = LoggerFactory.getLogger(AcceptedStripe.class);

	final KVConnection conn;
	private final AcceptedStripes registry;
	// Set once, by the first message, on this connection's thread.
	private StripedConnection joined;
	private int index;

	AcceptedStripe(AcceptedStripes registry, KVConnection conn) {
		this.registry = registry;
		this.conn = conn;
	}

	@Override
	public void onMessage(KVConnection c, KVMessage message) {
		if (joined == null) {
			if (message instanceof KVMessage.Hello hello) {
				joined = registry.open(conn);
				joined.handler().onMessage(hello);
			}
			else if (message instanceof KVMessage.Join j) {
				join(j);
			}
			else {
				c.close("decode sent " + message.getClass().getSimpleName() + " before the handshake");
			}
		}
		else if (index == 0) {
			joined.handler().onMessage(message);
		}
		else {
			c.close("unexpected " + message.getClass().getSimpleName() + " from decode on stripe " + index
					+ " (expected: control messages on stripe 0 only)");
		}
	}

	/** Attaches this connection to the one its token names, or refuses it naming why. */
	private void join(KVMessage.Join j) {
		StripedConnection s = registry.joining(j.token());
		String refused = s == null ? "unknown session token (expected: the token of a HelloAck that still waits "
				+ "for its stripes)" : s.attach(conn, j.stripe());
		if (refused != null) {
			String why = "prefill rank " + registry.name() + " refused stripe " + j.stripe() + " from decode "
					+ conn.remoteAddress() + ": " + refused;
			log.warn("[{}] {}", registry.name(), why);
			conn.send(new KVMessage.Reject(why), SendGate.OPEN, SendListener.either(() -> conn.close(why)));
			return;
		}
		joined = s;
		index = j.stripe();
		conn.send(new KVMessage.Joined(index));
		String draining = registry.drainReason();
		if (draining != null) {
			conn.send(new KVMessage.Draining(draining));
		}
	}

	@Override
	public PayloadSink onData(KVConnection c, DataHeader header) {
		throw new ProtocolException("decode " + c.remoteAddress() + " sent a data frame; prefill never receives KV");
	}

	@Override
	public void onClose(KVConnection c, CloseReason reason) {
		StripedConnection s = joined;
		registry.closed(this, reason, s != null);
		if (s != null) {
			s.stripeClosed(c, reason);
		}
	}
}
