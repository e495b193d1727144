package io.kvferry.transport.netty.internal;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import io.kvferry.HostPort;
import io.netty.util.NetUtil;

/**
 * The names the accepting side of one connection answers to: its socket's local address, and the addresses the
 * transport was told peers reach it at (NAT, port forwarding, a DNS name of a service). With a shared secret, a
 * connection whose {@link DialledEndpoint} names none of them is refused before anything is proven to it.
 *
 * <p>A peer's announcement matches when its dialled endpoint or the address its socket reached is one of the names.
 * Hosts are compared as written, never resolved (this runs on an event loop): IP literals by address (an IPv4-mapped
 * IPv6 address equals its IPv4 address), hostnames case-insensitively. An advertised name with port 0 stands for the
 * port the connection arrived on.
 */
final class ListenerNames {

	private final HostPort local;
	private final List<HostPort> advertised;

	private ListenerNames(HostPort local, List<HostPort> advertised) {
		this.local = local;
		this.advertised = advertised;
	}

	/**
	 * @param localAddress the accepted socket's local address (anything but an IP socket address has no name)
	 * @param advertised the transport's advertised addresses
	 * @return the names
	 */
	static ListenerNames of(SocketAddress localAddress, List<HostPort> advertised) {
		Objects.requireNonNull(advertised, "advertised");
		HostPort local = null;
		if (localAddress instanceof InetSocketAddress inet && inet.getAddress() != null) {
			local = new HostPort(NetUtil.toAddressString(inet.getAddress()), inet.getPort());
		}
		return new ListenerNames(local, advertised);
	}

	/** @return whether the peer's dialled endpoint or the address it reached is one of these names */
	boolean answers(DialledEndpoint dialled) {
		return names(dialled.endpoint()) || names(dialled.address());
	}

	private boolean names(String announced) {
		if (announced.isEmpty()) {
			return false;
		}
		HostPort candidate = HostPort.parse(announced);
		if (local != null && candidate.port() == local.port() && sameHost(candidate.host(), local.host())) {
			return true;
		}
		for (HostPort name : advertised) {
			int port = name.port() != 0 ? name.port() : local != null ? local.port() : -1;
			if (candidate.port() == port && sameHost(candidate.host(), name.host())) {
				return true;
			}
		}
		return false;
	}

	private static boolean sameHost(String a, String b) {
		InetAddress ipA = literal(a);
		InetAddress ipB = literal(b);
		if (ipA != null || ipB != null) {
			return ipA != null && ipA.equals(ipB);
		}
		return stripDot(a).equalsIgnoreCase(stripDot(b));
	}

	/** @return the address of an IP literal, or {@code null} for a hostname; never a DNS lookup */
	private static InetAddress literal(String host) {
		byte[] bytes = NetUtil.createByteArrayFromIpAddressString(host);
		if (bytes == null) {
			return null;
		}
		try {
			// From bytes, without a lookup; 16 bytes of an IPv4-mapped address give the IPv4 address.
			return InetAddress.getByAddress(bytes);
		}
		catch (UnknownHostException e) {
			return null;
		}
	}

	private static String stripDot(String host) {
		return host.endsWith(".") ? host.substring(0, host.length() - 1) : host;
	}

	/** @return the names for a refusal message, e.g. {@code "127.0.0.1:5000, prefill-0.example:5000 (advertised)"} */
	@Override
	public String toString() {
		List<String> names = new ArrayList<>();
		if (local != null) {
			names.add(local.toString());
		}
		for (HostPort name : advertised) {
			names.add((name.port() != 0 || local == null ? name.toString()
					: new HostPort(name.host(), local.port()).toString()) + " (advertised)");
		}
		return names.isEmpty() ? "(no names: not an IP socket and no advertised addresses)" : String.join(", ", names);
	}
}
