package io.kvferry.transport.netty.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetSocketAddress;
import java.util.List;

import io.kvferry.HostPort;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

/** Which dialled endpoints a listener's accepted socket answers to. */
class ListenerNamesTest {

	private static final InetSocketAddress LOCAL = new InetSocketAddress("10.0.0.7", 5000);

	private static boolean answers(ListenerNames names, String endpoint, String address) {
		return names.answers(new DialledEndpoint(endpoint, address));
	}

	@Test
	void theSocketsOwnAddressAnswersWhetherDialledByItOrReachedThroughAName() {
		ListenerNames names = ListenerNames.of(LOCAL, List.of());
		assertThat(answers(names, "10.0.0.7:5000", "10.0.0.7:5000")).isTrue();
		// A name decode resolved to this very address: no NAT in between, nothing to configure.
		assertThat(answers(names, "prefill-0.svc:5000", "10.0.0.7:5000")).isTrue();
		assertThat(answers(names, "prefill-0.svc:5000", "")).isFalse();
		// Another port of the same host (a stale entry whose port another process reuses), or another host.
		assertThat(answers(names, "10.0.0.7:5001", "10.0.0.7:5001")).isFalse();
		assertThat(answers(names, "10.0.0.66:5000", "10.0.0.66:5000")).isFalse();
		assertThat(names.answers(DialledEndpoint.NONE)).isFalse();
		assertThat(names).hasToString("10.0.0.7:5000");
	}

	@Test
	void advertisedNamesCompareAsWrittenWithoutLookupsAndPortZeroIsTheListenersOwn() {
		ListenerNames names = ListenerNames.of(LOCAL, List.of(new HostPort("Prefill.Example.", 0),
				new HostPort("203.0.113.9", 30000), new HostPort("2001:db8::1", 443)));
		assertThat(answers(names, "prefill.example:5000", "")).isTrue();
		assertThat(answers(names, "prefill.example.:5000", "")).isTrue();
		assertThat(answers(names, "prefill.example:5001", "")).isFalse();
		// A name is never resolved: 'localhost' is not 127.0.0.1 here.
		assertThat(answers(names, "localhost:5000", "")).isFalse();
		// Through a NAT: the public address the peer dialled.
		assertThat(answers(names, "gateway.example:30000", "203.0.113.9:30000")).isTrue();
		assertThat(answers(names, "[2001:db8:0::1]:443", "")).isTrue();
		assertThat(answers(names, "[2001:db8::2]:443", "")).isFalse();
		assertThat(names).hasToString("10.0.0.7:5000, Prefill.Example.:5000 (advertised), 203.0.113.9:30000 "
				+ "(advertised), [2001:db8::1]:443 (advertised)");
	}

	@Test
	void anIpv4MappedAddressIsItsIpv4Address() {
		ListenerNames names = ListenerNames.of(new InetSocketAddress("::ffff:127.0.0.1", 7), List.of());
		assertThat(answers(names, "127.0.0.1:7", "127.0.0.1:7")).isTrue();
		assertThat(answers(ListenerNames.of(new InetSocketAddress("127.0.0.1", 7), List.of()), "[::ffff:127.0.0.1]:7",
				"")).isTrue();
	}

	@Test
	void aSocketWithoutAnIpAddressAnswersOnlyToExplicitlyAdvertisedPorts() {
		EmbeddedChannel channel = new EmbeddedChannel();
		try {
			ListenerNames none = ListenerNames.of(channel.localAddress(), List.of());
			assertThat(none).hasToString("(no names: not an IP socket and no advertised addresses)");
			assertThat(answers(none, "embedded:0", "")).isFalse();
			ListenerNames portZero = ListenerNames.of(channel.localAddress(), List.of(new HostPort("p", 0)));
			assertThat(answers(portZero, "p:0", "")).isFalse();
			assertThat(ListenerNames.of(channel.localAddress(), List.of(new HostPort("p", 9)))).hasToString(
					"p:9 (advertised)");
		}
		finally {
			assertThat(channel.finish()).isFalse();
		}
		assertThatThrownBy(() -> ListenerNames.of(LOCAL, null)).isInstanceOf(NullPointerException.class)
				.hasMessage("advertised");
	}
}
