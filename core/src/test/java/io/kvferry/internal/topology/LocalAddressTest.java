package io.kvferry.internal.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

import io.kvferry.HostPort;
import io.kvferry.internal.topology.LocalAddress.NicAddress;

class LocalAddressTest {

	private static NicAddress nic(String name, String literal) {
		try {
			// Literals only: getByName does no lookup for them.
			return new NicAddress(name, InetAddress.getByName(literal));
		}
		catch (UnknownHostException e) {
			throw new IllegalArgumentException(literal, e);
		}
	}

	private static Function<String, String> env(Map<String, String> values) {
		return values::get;
	}

	@Test
	void sglangHostIpWinsOverEverything() {
		String host = LocalAddress.detect(env(Map.of("SGLANG_HOST_IP", "10.1.2.3", "HOST_IP", "10.9.9.9")),
				() -> List.of(nic("eth0", "192.168.0.5")));
		assertThat(host).isEqualTo("10.1.2.3");
	}

	@Test
	void hostIpIsUsedWhenSglangHostIpIsUnsetOrBlank() {
		assertThat(LocalAddress.detect(env(Map.of("HOST_IP", "10.9.9.9")), List::of)).isEqualTo("10.9.9.9");
		assertThat(LocalAddress.detect(env(Map.of("SGLANG_HOST_IP", "  ", "HOST_IP", " 10.9.9.9 ")), List::of))
				.isEqualTo("10.9.9.9");
	}

	@Test
	void environmentAddressMayBeBracketedIpv6OrAHostname() {
		assertThat(LocalAddress.detect(env(Map.of("HOST_IP", "[fd00::7]")), List::of)).isEqualTo("fd00::7");
		assertThat(LocalAddress.detect(env(Map.of("HOST_IP", "fd00::7")), List::of)).isEqualTo("fd00::7");
		assertThat(LocalAddress.detect(env(Map.of("SGLANG_HOST_IP", "node-3.cluster")), List::of))
				.isEqualTo("node-3.cluster");
	}

	@Test
	void environmentAddressSkipsInterfaceEnumeration() {
		AtomicInteger listed = new AtomicInteger();
		LocalAddress.detect(env(Map.of("HOST_IP", "10.0.0.1")), () -> {
			listed.incrementAndGet();
			return List.of();
		});
		assertThat(listed).hasValue(0);
	}

	@Test
	void prefersIpv4OverAnEarlierIpv6Address() {
		List<NicAddress> nics = List.of(nic("eth0", "2001:db8::5"), nic("eth0", "10.0.0.5"), nic("eth1", "10.0.1.5"));
		assertThat(LocalAddress.detect(env(Map.of()), () -> nics)).isEqualTo("10.0.0.5");
	}

	@Test
	void skipsLoopbackLinkLocalWildcardAndMulticast() {
		List<NicAddress> nics = List.of(nic("lo", "127.0.0.1"), nic("lo", "::1"), nic("eth0", "169.254.10.1"),
				nic("eth0", "fe80::1"), nic("eth0", "0.0.0.0"), nic("eth0", "224.0.0.1"), nic("eth0", "ff02::1"),
				nic("eth1", "172.16.4.2"));
		assertThat(LocalAddress.detect(env(Map.of()), () -> nics)).isEqualTo("172.16.4.2");
	}

	@Test
	void fallsBackToIpv6WithoutZone() throws UnknownHostException {
		byte[] bytes = InetAddress.getByName("fd12:3456::9").getAddress();
		NicAddress scoped = new NicAddress("eth0", Inet6Address.getByAddress(null, bytes, 3));
		assertThat(scoped.address().getHostAddress()).contains("%");
		assertThat(LocalAddress.detect(env(Map.of()), () -> List.of(nic("eth0", "fe80::2"), scoped)))
				.isEqualTo("fd12:3456:0:0:0:0:0:9");
	}

	@Test
	void fallsBackToLoopbackWhenNothingIsUsable() {
		assertThat(LocalAddress.detect(env(Map.of()), List::of)).isEqualTo("127.0.0.1");
		assertThat(LocalAddress.detect(env(Map.of()), () -> List.of(nic("lo", "127.0.0.1"), nic("eth0", "fe80::1"))))
				.isEqualTo("127.0.0.1");
	}

	@Test
	void namedInterfaceIsPreferred() {
		List<NicAddress> nics = List.of(nic("eth0", "10.0.0.5"), nic("ib0", "fd00::3"), nic("ib0", "10.200.0.5"));
		assertThat(LocalAddress.detect(env(Map.of("SGLANG_LOCAL_IP_NIC", "ib0")), () -> nics)).isEqualTo("10.200.0.5");
		assertThat(LocalAddress.detect(env(Map.of("SGLANG_LOCAL_IP_NIC", "eth0")), () -> nics)).isEqualTo("10.0.0.5");
	}

	@Test
	void namedInterfaceWithoutUsableAddressFallsBackToAllInterfaces() {
		List<NicAddress> nics = List.of(nic("ib0", "fe80::3"), nic("eth0", "10.0.0.5"));
		assertThat(LocalAddress.detect(env(Map.of("SGLANG_LOCAL_IP_NIC", "ib0")), () -> nics)).isEqualTo("10.0.0.5");
		assertThat(LocalAddress.detect(env(Map.of("SGLANG_LOCAL_IP_NIC", "missing0")), () -> nics))
				.isEqualTo("10.0.0.5");
	}

	@Test
	void detectsAUsableAddressOnThisMachine() throws UnknownHostException {
		String host = LocalAddress.detect();
		assertThat(host).isNotBlank();
		// Whatever the machine, the result is a literal HostPort accepts and, unless set by env, an IP address.
		HostPort endpoint = new HostPort(host, 0);
		assertThat(endpoint.host()).isEqualTo(host);
		if (System.getenv("SGLANG_HOST_IP") == null && System.getenv("HOST_IP") == null) {
			InetAddress address = InetAddress.getByName(host);
			assertThat(address.isLinkLocalAddress()).isFalse();
			assertThat(address.isAnyLocalAddress()).isFalse();
		}
	}

	@Test
	void rejectsNullArguments() {
		assertThatNullPointerException().isThrownBy(() -> LocalAddress.detect(null, List::of)).withMessage("env");
		assertThatNullPointerException().isThrownBy(() -> LocalAddress.detect(k -> null, null))
				.withMessage("interfaces");
		assertThatNullPointerException().isThrownBy(() -> new NicAddress(null, InetAddress.getLoopbackAddress()))
				.withMessage("nic");
	}
}
