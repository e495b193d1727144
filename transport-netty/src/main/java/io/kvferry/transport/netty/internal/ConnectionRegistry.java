package io.kvferry.transport.netty.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
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

	/**
	 * Closes every tracked connection, and every one added later, with {@code reason}.
	 *
	 * @return completes when every connection tracked now has closed (a close lets the peer read the last frames
	 *         first, within the close grace)
	 */
	public CompletableFuture<Void> closeAll(CloseReason reason) {
		closedReason = reason;
		List<CompletableFuture<Void>> closed = new ArrayList<>();
		for (NettyKVConnection connection : connections) {
			CompletableFuture<Void> done = new CompletableFuture<>();
			connection.channel().closeFuture().addListener(f -> done.complete(null));
			closed.add(done);
			connection.close(reason);
		}
		return CompletableFuture.allOf(closed.toArray(CompletableFuture[]::new));
	}

	/**
	 * The event loops of these connections ended: one whose channel is still open was left by the loop's shutdown
	 * (it closes such a channel without telling its handlers) and is closed from here.
	 */
	public void loopsEnded() {
		for (NettyKVConnection connection : connections) {
			connection.loopEnded();
			connections.remove(connection);
		}
	}

	/** @return how many connections are open */
	public int size() {
		return connections.size();
	}
}
