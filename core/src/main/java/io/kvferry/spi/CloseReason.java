package io.kvferry.spi;

import java.util.Objects;

/**
 * Why a connection closed, as the transport saw it: a kind the engine can act on and count without reading text, and
 * the message it tells people.
 *
 * @param kind what closed it
 * @param message names the peer and the cause
 */
public record CloseReason(Kind kind, String message) {

	/** What closed a connection. */
	public enum Kind {
		/** This side's engine closed it ({@link KVConnection#close(String)}). */
		LOCAL,
		/** The transport or listener it belonged to was disposed. */
		DISPOSED,
		/** The peer closed it, or the connection reset. */
		PEER_CLOSED,
		/** Nothing came from the peer for two heartbeat intervals. */
		SILENT_PEER,
		/** The peer broke the wire protocol or failed the handshake (preface, secret, TLS). */
		PROTOCOL,
		/** Any other I/O failure. */
		IO
	}

	public CloseReason {
		Objects.requireNonNull(kind, "kind");
		Objects.requireNonNull(message, "message");
	}

	@Override
	public String toString() {
		return message;
	}
}
