package io.kvferry.transport.netty.internal;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.kvferry.spi.CloseReason;

/**
 * The open connections of a listener or a transport, so that disposing it closes them. A connection leaves when its
 * channel closes; one added after {@link #closeAll} is closed at once. Thread-safe.
 */
public final class ConnectionRegistry {

	private final Set<NettyKVConnection> connections = ConcurrentHashMap.newKeySet();
	private volatile CloseReason closedReason;

	/** Tracks {@code connection} until its channel closes. */
	public void add(NettyKVConnection connection) {
		connections.add(connection);
		connection.channel().closeFuture().addListener(f -> connections.remove(connection));
		CloseReason reason = closedReason;
		if (reason != null) {
			connection.close(reason);
		}
	}

	/** Closes every tracked connection, and every one added later, with {@code reason}. */
	public void closeAll(CloseReason reason) {
		closedReason = reason;
		for (NettyKVConnection connection : connections) {
			connection.close(reason);
		}
	}

	/** @return how many connections are open */
	public int size() {
		return connections.size();
	}
}
