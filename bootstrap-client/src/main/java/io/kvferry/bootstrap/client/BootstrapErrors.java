package io.kvferry.bootstrap.client;

import java.io.IOException;
import java.net.ConnectException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

import javax.net.ssl.SSLException;

import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.netty.channel.ConnectTimeoutException;
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
	 * @param timeout the per-call timeout, named in timeout messages
	 * @param error what the HTTP exchange signalled
	 * @return {@code error} itself when it already is a {@link BootstrapException}, else TIMEOUT, UNREACHABLE or OTHER
	 *         (a TLS failure is OTHER: retrying will not fix a certificate)
	 */
	static BootstrapException fromFailure(String call, Duration timeout, Throwable error) {
		Throwable unwrapped = Exceptions.unwrap(error);
		if (unwrapped instanceof BootstrapException known) {
			return known;
		}
		Throwable cause = unwrapped;
		for (int depth = 0; cause != null && depth < MAX_CAUSE_DEPTH; depth++, cause = cause.getCause()) {
			// ConnectTimeoutException is a ConnectException, SslHandshakeTimeoutException an SSLException: test for
			// timeouts first.
			if (cause instanceof TimeoutException || cause instanceof ConnectTimeoutException
					|| cause instanceof io.netty.handler.timeout.TimeoutException
					|| cause instanceof SslHandshakeTimeoutException) {
				return new BootstrapException(Kind.TIMEOUT, 0,
						call + ": no answer within " + timeout.toMillis() + " ms", unwrapped);
			}
			if (cause instanceof UnknownHostException) {
				return new BootstrapException(Kind.UNREACHABLE, 0,
						call + ": unknown host (" + describe(cause) + ")", unwrapped);
			}
			if (cause instanceof ConnectException) {
				return new BootstrapException(Kind.UNREACHABLE, 0,
						call + ": cannot connect (" + describe(cause) + ")", unwrapped);
			}
			if (cause instanceof SSLException) {
				// Untrusted certificate, wrong host name, a plain-HTTP peer: configuration, so not worth retrying.
				return new BootstrapException(Kind.OTHER, 0, call + ": TLS failed (" + describe(cause) + ")",
						unwrapped);
			}
			if (cause instanceof IOException) {
				// Reset, closed before the answer (PrematureCloseException), broken pipe: the peer went away.
				return new BootstrapException(Kind.UNREACHABLE, 0,
						call + ": connection lost (" + describe(cause) + ")", unwrapped);
			}
		}
		return new BootstrapException(Kind.OTHER, 0, call + ": " + describe(unwrapped), unwrapped);
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
