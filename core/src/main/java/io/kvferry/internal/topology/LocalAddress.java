package io.kvferry.internal.topology;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The address a rank advertises to its peers ({@code rank_ip}), found as SGLang's {@code get_local_ip_auto} does,
 * so that a rank in a container or on a multi-homed host is reachable: the {@code SGLANG_HOST_IP} or {@code HOST_IP} environment variable (containers set it); else the first
 * usable address of the interface named by {@code SGLANG_LOCAL_IP_NIC}; else the first usable address of any
 * interface that is up; else {@code 127.0.0.1}. Usable means not loopback, link-local, wildcard or multicast; IPv4
 * addresses win over IPv6 ones, and an IPv6 zone ({@code %eth0}) is dropped.
 *
 * <p>Unlike SGLang this never resolves a hostname nor probes a route, so it cannot wait on DNS; it only lists the
 * local interfaces. Call it once at startup, off the event loops.
 */
public final class LocalAddress {

	/** Environment variables read, in order, for an explicit advertise address. */
	static final List<String> HOST_ENV = List.of("SGLANG_HOST_IP", "HOST_IP");
	/** Environment variable naming the preferred network interface. */
	static final String NIC_ENV = "SGLANG_LOCAL_IP_NIC";
	/** The last resort. */
	static final String LOOPBACK = "127.0.0.1";

	private static final Logger log = LoggerFactory.getLogger(LocalAddress.class);

	private LocalAddress() {
	}

	/**
	 * Finds the address this process advertises.
	 *
	 * @return an IP literal (IPv6 without brackets or zone) or, when set in the environment, the configured host
	 */
	public static String detect() {
		return detect(System::getenv, LocalAddress::interfaceAddresses);
	}

	/**
	 * @param env environment lookup (returns {@code null} when unset)
	 * @param interfaces the addresses of the interfaces that are up, with their interface names
	 */
	static String detect(Function<String, String> env, Supplier<List<NicAddress>> interfaces) {
		Objects.requireNonNull(env, "env");
		Objects.requireNonNull(interfaces, "interfaces");
		for (String name : HOST_ENV) {
			String value = env.apply(name);
			if (value != null && !value.isBlank()) {
				String host = stripBrackets(value.trim());
				log.debug("Advertise address {} from {}", host, name);
				return host;
			}
		}
		List<NicAddress> candidates = interfaces.get();
		String nic = env.apply(NIC_ENV);
		if (nic != null && !nic.isBlank()) {
			String fromNic = choose(candidates.stream().filter(c -> c.nic().equals(nic.trim())).toList());
			if (fromNic != null) {
				return fromNic;
			}
			log.warn("No usable address on interface {} named by {}; looking at every interface", nic, NIC_ENV);
		}
		String any = choose(candidates);
		if (any != null) {
			return any;
		}
		log.warn("No usable network address found; advertising {}", LOOPBACK);
		return LOOPBACK;
	}

	/**
	 * @param candidates interface addresses in enumeration order
	 * @return the first usable IPv4 address, else the first usable IPv6 address (zone dropped), else {@code null}
	 */
	static String choose(List<NicAddress> candidates) {
		String firstV6 = null;
		for (NicAddress c : candidates) {
			InetAddress a = c.address();
			if (a.isLoopbackAddress() || a.isLinkLocalAddress() || a.isAnyLocalAddress() || a.isMulticastAddress()) {
				continue;
			}
			if (a instanceof Inet4Address) {
				return a.getHostAddress();
			}
			if (a instanceof Inet6Address && firstV6 == null) {
				String text = a.getHostAddress();
				int zone = text.indexOf('%');
				firstV6 = zone < 0 ? text : text.substring(0, zone);
			}
		}
		return firstV6;
	}

	private static String stripBrackets(String host) {
		return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
	}

	// Addresses of interfaces that are up and not loopback, in the order the OS lists them.
	private static List<NicAddress> interfaceAddresses() {
		List<NicAddress> result = new ArrayList<>();
		try {
			Enumeration<NetworkInterface> nics = NetworkInterface.getNetworkInterfaces();
			if (nics == null) {
				return result;
			}
			for (NetworkInterface nic : Collections.list(nics)) {
				try {
					if (!nic.isUp() || nic.isLoopback()) {
						continue;
					}
				}
				catch (SocketException e) {
					log.debug("Skipping interface {}: {}", nic.getName(), e.toString());
					continue;
				}
				for (InetAddress address : Collections.list(nic.getInetAddresses())) {
					result.add(new NicAddress(nic.getName(), address));
				}
			}
		}
		catch (SocketException e) {
			log.warn("Cannot list network interfaces: {}", e.toString());
		}
		return result;
	}

	/**
	 * One address of a network interface.
	 *
	 * @param nic the interface name, such as {@code eth0}
	 * @param address the address
	 */
	record NicAddress(String nic, InetAddress address) {

		NicAddress {
			Objects.requireNonNull(nic, "nic");
			Objects.requireNonNull(address, "address");
		}
	}
}
