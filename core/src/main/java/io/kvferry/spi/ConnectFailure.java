package io.kvferry.spi;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.security.cert.CertificateException;
import java.util.Locale;

import javax.net.ssl.SSLException;

import org.jspecify.annotations.Nullable;

/**
 * Why a connection could not be opened, named for what it is: transports and registry clients describe their connect
 * failures with it, so that a reason sends an operator to the right machine. Sockets report these failures in forms
 * that mislead when printed as they are: Netty's epoll transport reports an unreachable host or network as a
 * {@link NoRouteToHostException} without a message (printed {@code "null: /10.0.0.5:8998"}, which reads like a lost
 * connection), and a connect timeout as a {@link ConnectException} (which reads like a refusal).
 *
 * <pre>{@code
 * ConnectFailure f = ConnectFailure.of(error);
 * String reason = f == null ? "connection lost: " + error.getMessage() : f.describe("10.0.0.5:8998", error);
 * // "no route to host 10.0.0.5:8998 (the host is down or its network is unreachable from here)"
 * }</pre>
 */
public enum ConnectFailure {

	/** Nothing listens on the port (or a firewall rejects the connection). */
	REFUSED,
	/** The host or its network is unreachable: no route, the host is down, a link is down. */
	NO_ROUTE,
	/** The host name does not resolve. */
	UNKNOWN_HOST,
	/** The peer did not accept the connection in time (the host is down, or a firewall drops packets). */
	TIMED_OUT,
	/** The connection opened but its TLS handshake failed (certificate, host name, or a peer that does not speak TLS). */
	TLS,
	/** Any other failure to open the connection. */
	FAILED;

	/** How deep a cause chain is searched. */
	private static final int MAX_DEPTH = 16;

	/** Longest detail quoted from a failure's message (a TLS error can hex-dump a whole read). */
	private static final int MAX_DETAIL = 160;

	/**
	 * @param error what a connect (or a call that had to connect first) failed with, wrapped or not
	 * @return the connect-time failure in its cause chain, or null when it is none (e.g. a connection lost after it
	 *         opened, or a read timeout)
	 */
	public static @Nullable ConnectFailure of(Throwable error) {
		int depth = 0;
		for (Throwable t = error; t != null && depth < MAX_DEPTH; t = t.getCause(), depth++) {
			ConnectFailure f = classify(t);
			if (f != null) {
				return f;
			}
			if (t.getCause() == t) {
				break;
			}
		}
		return null;
	}

	private static @Nullable ConnectFailure classify(Throwable t) {
		if (t instanceof SSLException || t instanceof CertificateException) {
			return TLS;
		}
		if (t instanceof UnknownHostException || t instanceof UnresolvedAddressException) {
			return UNKNOWN_HOST;
		}
		if (t instanceof NoRouteToHostException) {
			return NO_ROUTE;
		}
		String message = String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT);
		if (t instanceof SocketTimeoutException) {
			// A blocking socket's read timeout came after its connection opened.
			return message.contains("read") ? null : TIMED_OUT;
		}
		if (t instanceof ConnectException) {
			// Netty's connect timeout and the kernel's ETIMEDOUT are ConnectExceptions; only their words tell them.
			if (message.contains("timed out")) {
				return TIMED_OUT;
			}
			if (message.contains("refused")) {
				return REFUSED;
			}
			if (unreachable(message)) {
				return NO_ROUTE;
			}
			return FAILED;
		}
		if (t instanceof SocketException && unreachable(message)) {
			return NO_ROUTE;
		}
		return null;
	}

	private static boolean unreachable(String message) {
		return message.contains("no route") || message.contains("unreachable");
	}

	/**
	 * @param address the address dialled, as the caller names it ({@code host:port})
	 * @param error the failure, for the detail a TLS or unclassified failure needs
	 * @return the failure in words, naming the address, e.g. {@code "connection refused by 10.0.0.5:8998 (nothing
	 *         listens on that port, or a firewall rejects it)"}
	 */
	public String describe(String address, Throwable error) {
		return switch (this) {
			case REFUSED -> "connection refused by " + address + " (nothing listens on that port, or a firewall "
					+ "rejects it)";
			case NO_ROUTE -> "no route to host " + address + " (the host is down or its network is unreachable from "
					+ "here)";
			case UNKNOWN_HOST -> "unknown host: the name of " + address + " does not resolve" + detail(error);
			case TIMED_OUT -> address + " did not accept the connection in time (the host is down, or a firewall "
					+ "drops its packets)";
			case TLS -> "TLS handshake with " + address + " failed" + detail(error);
			case FAILED -> "cannot connect to " + address + detail(error);
		};
	}

	/** @return {@code " (message)"} of the failure this kind was found on, or empty when it says nothing more */
	private String detail(Throwable error) {
		int depth = 0;
		for (Throwable t = error; t != null && depth < MAX_DEPTH; t = t.getCause(), depth++) {
			if (classify(t) == this) {
				String message = t.getMessage();
				// Netty appends the address to a message it may not have: "null: /10.0.0.5:8998".
				if (message == null || message.isBlank() || message.startsWith("null:")) {
					return "";
				}
				return " (" + (message.length() > MAX_DETAIL ? message.substring(0, MAX_DETAIL) + "..." : message) + ")";
			}
			if (t.getCause() == t) {
				break;
			}
		}
		return "";
	}
}
