package io.kvferry.transport.netty.internal;

import java.io.IOException;
import java.time.Duration;

import javax.net.ssl.SSLException;

import io.kvferry.HostPort;
import io.kvferry.KVFerryException;
import io.kvferry.ProtocolException;
import io.kvferry.spi.CloseReason;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.NotSslRecordException;

/**
 * Why a connection closes, in words: one factory per cause, so that the log line, the engine's {@code onClose} and a
 * failed {@code connect} say the same thing. Kinds: a peer that broke the protocol (or TLS) is {@code PROTOCOL}, a
 * socket or handler failure {@code IO}, silence {@code SILENT_PEER}, a peer's close {@code PEER_CLOSED}.
 */
final class CloseReasons {

	/** Longest excerpt of a TLS error message in a close reason (Netty's can hex-dump a whole read). */
	private static final int MAX_TLS_DETAIL = 160;

	private CloseReasons() {
	}

	static CloseReason handshakeTimeout(TransportSettings settings) {
		return new CloseReason(CloseReason.Kind.PROTOCOL, "handshake not completed within "
				+ TransportSettings.format(settings.handshakeTimeout()));
	}

	/** @param interval the peer's heartbeat interval, as it announced it (this side's own before it did) */
	static CloseReason silentPeer(HostPort remote, Duration interval) {
		return new CloseReason(CloseReason.Kind.SILENT_PEER, "no heartbeat from " + remote + " for 2 intervals ("
				+ TransportSettings.format(interval.multipliedBy(2)) + ")");
	}

	static CloseReason peerClosed(HostPort remote, boolean prefaceReceived, TransportSettings settings) {
		return new CloseReason(CloseReason.Kind.PEER_CLOSED, "connection closed by peer " + remote
				+ (prefaceReceived ? ""
						: " before it sent a kvferry preface" + (settings.tls() == null
								? " (a listener that requires TLS closes plain connections this way)"
								: "")));
	}

	/** A failure the decoder or the engine's handler reported: the peer's protocol error, or the handler's. */
	static CloseReason failure(Throwable cause) {
		return cause instanceof ProtocolException ? new CloseReason(CloseReason.Kind.PROTOCOL, cause.getMessage())
				: new CloseReason(CloseReason.Kind.IO, "handler failed: " + cause);
	}

	/** @return the TLS exception behind {@code cause}, or {@code null} when it is none */
	static Throwable tlsCause(Throwable cause) {
		return cause instanceof DecoderException && cause.getCause() instanceof SSLException ? cause.getCause()
				: cause instanceof SSLException ? cause : null;
	}

	/** An exception that reached the end of the pipeline: a TLS error, an I/O error, or anything else. */
	static CloseReason pipelineError(Throwable cause) {
		Throwable tls = tlsCause(cause);
		if (tls != null) {
			return new CloseReason(CloseReason.Kind.PROTOCOL, "TLS error: " + describeTls(tls));
		}
		return new CloseReason(CloseReason.Kind.IO, cause instanceof IOException ? "I/O error: " + cause.getMessage()
				: "pipeline error: " + cause);
	}

	static ProtocolException tlsHandshakeFailed(Throwable cause) {
		return new ProtocolException("TLS handshake failed: " + describeTls(cause), cause);
	}

	/**
	 * @param failure why the handshake failed, when it did, or {@code null}
	 * @param reason why the connection closed
	 * @return what a handshake that never completed fails with
	 */
	static KVFerryException handshakeFailed(HostPort remote, ProtocolException failure, CloseReason reason) {
		return failure != null
				? new ProtocolException("handshake with " + remote + " failed: " + failure.getMessage(), failure)
				: new KVFerryException("connection to " + remote + " closed before the handshake completed: " + reason);
	}

	private static String describeTls(Throwable cause) {
		Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
		String message = String.valueOf(c.getMessage());
		if (message.length() > MAX_TLS_DETAIL) {
			message = message.substring(0, MAX_TLS_DETAIL) + "...";
		}
		if (c instanceof NotSslRecordException) {
			return "the peer does not speak TLS (" + message + ")";
		}
		return c.getClass().getSimpleName() + ": " + message;
	}
}
