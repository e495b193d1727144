package io.kvferry;

import java.util.Objects;

/**
 * A network endpoint {@code host:port}. IPv6 literals are kept without brackets and bracketed when formatted
 * ({@code [::1]:8998}), as SGLang's {@code NetworkAddress} does.
 *
 * @param host IPv4 literal, IPv6 literal (no brackets) or hostname
 * @param port 0..65535
 */
public record HostPort(String host, int port) {

	public HostPort {
		Objects.requireNonNull(host, "host");
		if (host.startsWith("[") && host.endsWith("]")) {
			host = host.substring(1, host.length() - 1);
		}
		if (host.isEmpty()) {
			throw new IllegalArgumentException("host : empty (expected: an IP address or hostname)");
		}
		if (port < 0 || port > 65535) {
			throw new IllegalArgumentException("port : " + port + " (expected: 0..65535)");
		}
	}

	/**
	 * Parses {@code v4:port}, {@code [v6]:port} or {@code hostname:port}. A bare IPv6 address with a port is rejected
	 * as ambiguous.
	 *
	 * @param text the address
	 * @return the endpoint
	 * @throws IllegalArgumentException naming what is wrong
	 */
	public static HostPort parse(String text) {
		Objects.requireNonNull(text, "text");
		String s = text.trim();
		if (s.isEmpty()) {
			throw new IllegalArgumentException("address : empty (expected: host:port)");
		}
		String host;
		String portText;
		if (s.startsWith("[")) {
			int close = s.indexOf(']');
			if (close < 0) {
				throw new IllegalArgumentException("address '" + text + "': missing ']' after IPv6 host");
			}
			host = s.substring(1, close);
			if (close + 1 >= s.length() || s.charAt(close + 1) != ':') {
				throw new IllegalArgumentException("address '" + text + "': missing ':port' after [" + host + "]");
			}
			portText = s.substring(close + 2);
		}
		else {
			int colon = s.lastIndexOf(':');
			if (colon < 0) {
				throw new IllegalArgumentException("address '" + text + "': missing ':port'");
			}
			if (s.indexOf(':') != colon) {
				throw new IllegalArgumentException("address '" + text
						+ "': ambiguous IPv6 address with port (expected: [v6]:port)");
			}
			host = s.substring(0, colon);
			portText = s.substring(colon + 1);
		}
		if (host.isEmpty()) {
			throw new IllegalArgumentException("address '" + text + "': empty host");
		}
		return new HostPort(host, parsePort(text, portText));
	}

	private static int parsePort(String text, String portText) {
		if (portText.isEmpty() || portText.length() > 5 || !portText.chars().allMatch(c -> c >= '0' && c <= '9')) {
			throw new IllegalArgumentException("address '" + text + "': port '" + portText
					+ "' is not a number (expected: 0..65535)");
		}
		int port = Integer.parseInt(portText);
		if (port > 65535) {
			throw new IllegalArgumentException("address '" + text + "': port " + port + " (expected: 0..65535)");
		}
		return port;
	}

	/**
	 * The bootstrap server's host taken from SGLang's {@code --dist-init-addr} ({@code host:port}), as SGLang's
	 * {@code _register_to_bootstrap} does: {@code [v6]:port} and {@code [v6]} give the IPv6 literal (returned without
	 * brackets, as {@link HostPort} keeps it); anything else gives the text before the last {@code ':'} (all of it
	 * when there is none). The port is ignored: the bootstrap server has its own.
	 *
	 * <p>SGLang resolves a hostname to an IPv4 address here ({@code gethostbyname}); this method does not, so it
	 * never blocks on DNS. A hostname is returned as it is and resolved by the non-blocking HTTP client when it
	 * connects.
	 *
	 * @param distInitAddr the {@code --dist-init-addr} value
	 * @return the host: an IP literal (IPv6 without brackets) or a hostname
	 * @throws IllegalArgumentException when the value is empty, has an empty host, an unclosed or misplaced bracket, or
	 *         is a bare IPv6 address (ambiguous with a port)
	 */
	public static String distInitBootstrapHost(String distInitAddr) {
		Objects.requireNonNull(distInitAddr, "distInitAddr");
		String s = distInitAddr.trim();
		if (s.isEmpty()) {
			throw new IllegalArgumentException("dist_init_addr : empty (expected: host:port or [v6]:port)");
		}
		String host;
		if (s.startsWith("[")) {
			int close = s.indexOf(']');
			if (close < 0 || (close + 1 < s.length() && s.charAt(close + 1) != ':')) {
				throw new IllegalArgumentException("dist_init_addr : " + distInitAddr
						+ " (expected: [v6] or [v6]:port)");
			}
			host = s.substring(1, close);
		}
		else {
			int colon = s.lastIndexOf(':');
			host = colon < 0 ? s : s.substring(0, colon);
			if (host.indexOf(':') >= 0) {
				throw new IllegalArgumentException("dist_init_addr : " + distInitAddr
						+ " is ambiguous for an IPv6 address (expected: [v6]:port)");
			}
		}
		if (host.isEmpty() || host.indexOf('[') >= 0 || host.indexOf(']') >= 0) {
			throw new IllegalArgumentException("dist_init_addr : " + distInitAddr + " has no valid host (expected: "
					+ "host:port or [v6]:port)");
		}
		return host;
	}

	/** @return whether the host is an IPv6 literal */
	public boolean isIpv6() {
		return host.indexOf(':') >= 0;
	}

	/** @return the host as it appears in a URL: bracketed when IPv6 */
	public String urlHost() {
		return isIpv6() ? "[" + host + "]" : host;
	}

	/** @return {@code http://host:port} with IPv6 bracketed */
	public String httpUrl() {
		return "http://" + this;
	}

	@Override
	public String toString() {
		return urlHost() + ":" + port;
	}
}
