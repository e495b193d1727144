package io.kvferry.transport.netty.internal;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

import io.kvferry.HostPort;
import io.netty.util.NetUtil;

/**
 * What the connecting side of a connection dialled, as it announces it in its {@code AUTH} frame. Both shared-secret
 * proofs cover it (see {@link SharedSecret}), and the accepting side refuses a connection whose dialled endpoint is
 * not one of its own names ({@code ListenerNames}). A relay that a peer dialled at its own address and that forwards
 * to a real listener is caught either way: unchanged, the listener sees an endpoint that is not its own; rewritten,
 * the proofs cover another endpoint than the one the connecting side dialled and verify on neither side.
 *
 * @param endpoint {@code host:port} as the connecting side dialled it (a hostname as written, or an IP literal with
 *        IPv6 bracketed); empty in the accepting side's {@code AUTH}
 * @param address the IP literal and port the connecting socket reached ({@code [v6]:port} bracketed), the connecting
 *        side's view of the connection's far end; empty when unknown (no IP socket) and from the accepting side
 */
public record DialledEndpoint(String endpoint, String address) {

	/** Longest {@link #endpoint} and {@link #address}, in UTF-8 bytes: a 253-byte DNS name, brackets and a port fit. */
	public static final int MAX_LENGTH = 300;

	/** What the accepting side announces: it dialled nothing. */
	public static final DialledEndpoint NONE = new DialledEndpoint("", "");

	public DialledEndpoint {
		Objects.requireNonNull(endpoint, "endpoint");
		Objects.requireNonNull(address, "address");
		String problem = problem(endpoint, false);
		if (problem == null) {
			problem = problem(address, true);
		}
		if (problem != null) {
			throw new IllegalArgumentException(problem);
		}
	}

	/**
	 * @param dialled the endpoint the connecting side asked for
	 * @param connected the socket's remote address once connected
	 * @return the connecting side's announcement
	 */
	public static DialledEndpoint of(HostPort dialled, SocketAddress connected) {
		Objects.requireNonNull(dialled, "dialled");
		String address = "";
		if (connected instanceof InetSocketAddress inet && inet.getAddress() != null) {
			address = new HostPort(NetUtil.toAddressString(inet.getAddress()), inet.getPort()).toString();
		}
		return new DialledEndpoint(dialled.toString(), address);
	}

	/**
	 * Checks a field as received, without exceptions: for the codec, which reports a malformed frame itself.
	 *
	 * @param value the field's text
	 * @param ipLiteral whether the host must be an IP literal ({@link #address})
	 * @return what is wrong, naming the field, or {@code null} when the value is valid (empty, or {@code host:port})
	 */
	static String problem(String value, boolean ipLiteral) {
		String field = ipLiteral ? "address" : "endpoint";
		if (value.isEmpty()) {
			return null;
		}
		if (value.getBytes(StandardCharsets.UTF_8).length > MAX_LENGTH) {
			return field + " : " + value.getBytes(StandardCharsets.UTF_8).length + " bytes (expected: at most "
					+ MAX_LENGTH + ")";
		}
		for (int i = 0; i < value.length(); i++) {
			char c = value.charAt(i);
			if (c <= ' ' || c == 0x7f) {
				return field + " : a control character or space at index " + i + " (expected: host:port)";
			}
		}
		HostPort parsed;
		try {
			parsed = HostPort.parse(value);
		}
		catch (IllegalArgumentException e) {
			return field + " : " + e.getMessage();
		}
		if (ipLiteral && NetUtil.createByteArrayFromIpAddressString(parsed.host()) == null) {
			return field + " : '" + value + "' (expected: an IP literal and a port)";
		}
		return null;
	}

	/** @return whether this announces nothing (the accepting side's) */
	public boolean isNone() {
		return endpoint.isEmpty();
	}

	/** @return the dialled endpoint, with the address it reached when that differs, for log lines and reasons */
	@Override
	public String toString() {
		if (endpoint.isEmpty()) {
			return "(none)";
		}
		return address.isEmpty() || address.equals(endpoint) ? endpoint : endpoint + " (" + address + ")";
	}
}
