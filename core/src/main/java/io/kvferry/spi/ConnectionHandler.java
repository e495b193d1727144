package io.kvferry.spi;

import org.jspecify.annotations.Nullable;

/**
 * The engine's side of one connection. A transport calls these methods serially for one connection (from its I/O
 * thread), never concurrently; implementations must not block.
 */
public interface ConnectionHandler {

	/** A control message arrived. */
	void onMessage(KVConnection connection, KVMessage message);

	/**
	 * A data frame header arrived; its payload follows. A transport may ask for the sinks of several headers before the
	 * first of them completed (a scatter frame's pieces, reads it issues itself to fetch payloads); it feeds and
	 * completes them in header order.
	 *
	 * @return where the payload goes, or {@code null} to discard it (unknown, aborted or finished room)
	 * @throws io.kvferry.ProtocolException when the write is forbidden; the transport closes the connection
	 */
	@Nullable PayloadSink onData(KVConnection connection, DataHeader header);

	/**
	 * A scatter frame's header arrived: pieces of one room whose payloads follow in piece order. Sets
	 * {@code sinks[i]} to piece {@code i}'s sink, or leaves it {@code null} to discard that piece, exactly as
	 * {@link #onData} called for each {@link ScatterHeader#piece piece} in turn would; an engine may check what all the
	 * pieces share (their room, their connection) once. The transport hands {@code sinks} filled with {@code null},
	 * at least {@link ScatterHeader#count()} long.
	 *
	 * @throws io.kvferry.ProtocolException when a write is forbidden; the transport closes the connection
	 */
	default void onScatter(KVConnection connection, ScatterHeader header, @Nullable PayloadSink[] sinks) {
		for (int i = 0; i < header.count(); i++) {
			sinks[i] = onData(connection, header.piece(i));
		}
	}

	/** The connection closed (either side, heartbeat loss, malformed input); called once. */
	void onClose(KVConnection connection, CloseReason reason);
}
