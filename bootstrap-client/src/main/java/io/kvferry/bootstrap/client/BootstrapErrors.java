package io.kvferry.bootstrap.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.kvferry.spi.ConnectFailure;
import io.netty.handler.ssl.SslHandshakeTimeoutException;
import reactor.core.Exceptions;

/**
 * Turns HTTP answers and transport failures into {@link BootstrapException}s, in one place. Every message starts with
 * the call ({@code "GET http://host:port/route?..."}) so a log line names the URL. Stateless; any thread.
 */
final class BootstrapErrors {

	/** Longest server text quoted in a message; bootstrap error bodies are one short sentence. */
	static final int MAX_QUOTED_CHARS = 512;

	/** How deep a cause chain is searched for a known transport failure. */
	private static final int MAX_CAUSE_DEPTH = 8;

	/** A server that requires TLS closes a plain connection without a word: say what is likely. */
	private static final String PLAIN_TO_TLS_HINT = " (a server that requires TLS closes plain HTTP connections this "
			+ "way: if it serves https, call it with TLS)";

	private BootstrapErrors() {
	}

	/**
	 * @param call method and URL
	 * @param status a non-200 HTTP status
	 * @param reason the status line's reason phrase
	 * @param body the answer's body (plain text for bootstrap errors), quoted in the message
	 * @return the typed failure: 400, 401, 404 and 503 have their own kinds, anything else is OTHER
	 */
	static BootstrapException fromStatus(String call, int status, String reason, byte[] body) {
		Kind kind = switch (status) {
			case 400 -> Kind.BAD_REQUEST;
			case 401 -> Kind.UNAUTHORIZED;
			case 404 -> Kind.NOT_FOUND;
			case 503 -> Kind.NOT_READY;
			default -> Kind.OTHER;
		};
		String text = quote(body);
		StringBuilder message = new StringBuilder(call).append(": ").append(status);
		if (!reason.isEmpty()) {
			message.append(' ').append(reason);
		}
		if (!text.isEmpty()) {
			message.append(": ").append(text);
		}
		return new BootstrapException(kind, status, message.toString());
	}

	/**
	 * @param call method and URL
	 * @param address the server's {@code host:port}, named by connect failures
	 * @param opened whether the call had a connection (its request was about to go out) before it failed: a call
	 *        that timed out without one could not connect
	 * @param timeout the per-call timeout, named in timeout messages
	 * @param error what the HTTP exchange signalled
	 * @return {@code error} itself when it already is a {@link BootstrapException}, else TIMEOUT, UNREACHABLE or OTHER
	 *         (a TLS failure is OTHER: retrying will not fix a certificate)
	 */
	static BootstrapException fromFailure(String call, String address, boolean opened, Duration timeout,
			Throwable error) {
		Throwable unwrapped = Exceptions.unwrap(error);
		if (unwrapped instanceof BootstrapException known) {
			return known;
		}
		ConnectFailure connect = ConnectFailure.of(unwrapped);
		boolean timedOut = isTimeout(unwrapped);
		if (connect == ConnectFailure.TIMED_OUT || (timedOut && !opened && connect == null)) {
			return new BootstrapException(Kind.TIMEOUT, 0, call + ": could not connect within " + timeout.toMillis()
					+ " ms: " + ConnectFailure.TIMED_OUT.describe(address, unwrapped), unwrapped);
		}
		if (connect == ConnectFailure.TLS) {
			// A handshake that timed out may pass; an untrusted certificate, a wrong host name or a plain-HTTP peer is
			// configuration, so not worth retrying.
			return new BootstrapException(timedOut ? Kind.TIMEOUT : Kind.OTHER, 0, call + ": "
					+ connect.describe(address, unwrapped), unwrapped);
		}
		if (connect != null) {
			return new BootstrapException(Kind.UNREACHABLE, 0, call + ": cannot connect: "
					+ connect.describe(address, unwrapped), unwrapped);
		}
		if (timedOut) {
			return new BootstrapException(Kind.TIMEOUT, 0,
					call + ": no answer within " + timeout.toMillis() + " ms", unwrapped);
		}
		Throwable cause = unwrapped;
		for (int depth = 0; cause != null && depth < MAX_CAUSE_DEPTH; depth++, cause = cause.getCause()) {
			if (cause instanceof IOException) {
				// Reset, closed before the answer (PrematureCloseException), broken pipe: the peer went away.
				String lost = describe(cause);
				boolean unanswered = call.contains(" http://") && lost.contains("BEFORE response");
				return new BootstrapException(Kind.UNREACHABLE, 0, call + ": connection lost (" + lost + ")"
						+ (unanswered ? PLAIN_TO_TLS_HINT : ""), unwrapped);
			}
		}
		return new BootstrapException(Kind.OTHER, 0, call + ": " + describe(unwrapped), unwrapped);
	}

	/** @return whether a timeout is among the causes (the call's, a read's, or a TLS handshake's) */
	private static boolean isTimeout(Throwable error) {
		Throwable cause = error;
		for (int depth = 0; cause != null && depth < MAX_CAUSE_DEPTH; depth++, cause = cause.getCause()) {
			if (cause instanceof TimeoutException || cause instanceof io.netty.handler.timeout.TimeoutException
					|| cause instanceof SslHandshakeTimeoutException) {
				return true;
			}
		}
		return false;
	}

	/** @return the body as one line of text, at most {@link #MAX_QUOTED_CHARS} characters */
	static String quote(byte[] body) {
		String text = new String(body, StandardCharsets.UTF_8).strip();
		StringBuilder line = new StringBuilder(Math.min(text.length(), MAX_QUOTED_CHARS + 3));
		for (int i = 0; i < text.length() && line.length() < MAX_QUOTED_CHARS; i++) {
			char c = text.charAt(i);
			line.append(Character.isISOControl(c) ? ' ' : c);
		}
		if (text.length() > MAX_QUOTED_CHARS) {
			line.append("...");
		}
		return line.toString();
	}

	private static String describe(Throwable error) {
		String message = error.getMessage();
		return message == null || message.isBlank() ? error.getClass().getSimpleName() : message;
	}
}
