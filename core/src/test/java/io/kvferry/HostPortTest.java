package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import org.junit.jupiter.api.Test;

class HostPortTest {

	@Test
	void parsesIpv4WithPort() {
		HostPort hp = HostPort.parse("10.0.0.7:8998");
		assertThat(hp.host()).isEqualTo("10.0.0.7");
		assertThat(hp.port()).isEqualTo(8998);
		assertThat(hp.isIpv6()).isFalse();
		assertThat(hp.urlHost()).isEqualTo("10.0.0.7");
		assertThat(hp).hasToString("10.0.0.7:8998");
		assertThat(hp.httpUrl()).isEqualTo("http://10.0.0.7:8998");
	}

	@Test
	void parsesBracketedIpv6WithPort() {
		HostPort hp = HostPort.parse("[2001:db8::1]:17000");
		assertThat(hp.host()).isEqualTo("2001:db8::1");
		assertThat(hp.port()).isEqualTo(17000);
		assertThat(hp.isIpv6()).isTrue();
		assertThat(hp.urlHost()).isEqualTo("[2001:db8::1]");
		assertThat(hp).hasToString("[2001:db8::1]:17000");
		assertThat(hp.httpUrl()).isEqualTo("http://[2001:db8::1]:17000");
		assertThat(HostPort.parse("[::1]:0")).isEqualTo(new HostPort("::1", 0));
		assertThat(HostPort.parse("[::ffff:10.0.0.1]:80").host()).isEqualTo("::ffff:10.0.0.1");
	}

	@Test
	void parsesHostnamesWithPort() {
		assertThat(HostPort.parse("localhost:8998")).isEqualTo(new HostPort("localhost", 8998));
		assertThat(HostPort.parse("prefill-0.kv.svc.cluster.local:30000"))
				.isEqualTo(new HostPort("prefill-0.kv.svc.cluster.local", 30000));
		assertThat(HostPort.parse("  node_1:1  ")).isEqualTo(new HostPort("node_1", 1));
	}

	@Test
	void acceptsThePortRangeBounds() {
		assertThat(HostPort.parse("h:0").port()).isZero();
		assertThat(HostPort.parse("h:65535").port()).isEqualTo(65535);
		assertThat(HostPort.parse("h:00080").port()).isEqualTo(80);
	}

	@Test
	void rejectsBadPorts() {
		for (String bad : new String[] { "h:65536", "h:99999", "[::1]:70000" }) {
			assertThatIllegalArgumentException().as(bad).isThrownBy(() -> HostPort.parse(bad))
					.withMessageContaining("(expected: 0..65535)");
		}
		for (String bad : new String[] { "h:", "h:abc", "h:-1", "h:+80", "h:8 0", "h:123456", "h:1e3", "[::1]:",
				"[::1]:x", "h:٣" }) {
			assertThatIllegalArgumentException().as(bad).isThrownBy(() -> HostPort.parse(bad))
					.withMessageContaining("is not a number");
		}
	}

	@Test
	void rejectsMissingPort() {
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse("10.0.0.1"))
				.withMessageContaining("missing ':port'");
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse("localhost"))
				.withMessageContaining("missing ':port'");
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse("[::1]"))
				.withMessageContaining("missing ':port' after [::1]");
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse("[::1]8998"))
				.withMessageContaining("missing ':port'");
	}

	@Test
	void rejectsBareIpv6AsAmbiguous() {
		for (String bad : new String[] { "::1:8998", "2001:db8::1:80", "fe80::1", "a:b:c" }) {
			assertThatIllegalArgumentException().as(bad).isThrownBy(() -> HostPort.parse(bad))
					.withMessageContaining("ambiguous IPv6 address with port (expected: [v6]:port)");
		}
	}

	@Test
	void rejectsEmptyHostsAndBrokenBrackets() {
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse("")).withMessageContaining("empty");
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse("   ")).withMessageContaining("empty");
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse(":80"))
				.withMessageContaining("empty host");
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse("[]:80"))
				.withMessageContaining("empty host");
		assertThatIllegalArgumentException().isThrownBy(() -> HostPort.parse("[::1:80"))
				.withMessageContaining("missing ']'");
		assertThatNullPointerException().isThrownBy(() -> HostPort.parse(null)).withMessage("text");
	}

	@Test
	void constructorStripsBracketsAndValidates() {
		assertThat(new HostPort("[::1]", 5)).isEqualTo(new HostPort("::1", 5));
		assertThatIllegalArgumentException().isThrownBy(() -> new HostPort("", 1))
				.withMessage("host : empty (expected: an IP address or hostname)");
		assertThatIllegalArgumentException().isThrownBy(() -> new HostPort("[]", 1)).withMessageContaining("host");
		assertThatIllegalArgumentException().isThrownBy(() -> new HostPort("h", -1))
				.withMessage("port : -1 (expected: 0..65535)");
		assertThatIllegalArgumentException().isThrownBy(() -> new HostPort("h", 65536))
				.withMessage("port : 65536 (expected: 0..65535)");
		assertThatNullPointerException().isThrownBy(() -> new HostPort(null, 1)).withMessage("host");
	}

	@Test
	void toStringAndHttpUrlRoundTripThroughParse() {
		String[] inputs = { "127.0.0.1:1", "10.20.30.40:65535", "[::]:0",
				"[2001:db8:0:0:0:0:0:1]:443", "example.org:80", "x:12" };
		for (String input : inputs) {
			HostPort hp = HostPort.parse(input);
			assertThat(hp).as(input).hasToString(input);
			assertThat(HostPort.parse(hp.toString())).as(input).isEqualTo(hp);
			assertThat(hp.httpUrl()).as(input).isEqualTo("http://" + input);
			assertThat(HostPort.parse(hp.httpUrl().substring("http://".length()))).isEqualTo(hp);
		}
		for (HostPort hp : new HostPort[] { new HostPort("::1", 8998), new HostPort("1.2.3.4", 0),
				new HostPort("node", 7) }) {
			assertThat(HostPort.parse(hp.toString())).isEqualTo(hp);
		}
	}

	@Test
	void distInitHostOfIpv4IsThePartBeforeThePort() {
		assertThat(HostPort.distInitBootstrapHost("10.0.0.1:5000")).isEqualTo("10.0.0.1");
		assertThat(HostPort.distInitBootstrapHost(" 192.168.1.10:20000 ")).isEqualTo("192.168.1.10");
		assertThat(HostPort.distInitBootstrapHost("10.0.0.1")).isEqualTo("10.0.0.1");
		// SGLang ignores the port: whatever follows the last ':' is dropped.
		assertThat(HostPort.distInitBootstrapHost("10.0.0.1:")).isEqualTo("10.0.0.1");
		assertThat(HostPort.distInitBootstrapHost("10.0.0.1:notaport")).isEqualTo("10.0.0.1");
	}

	@Test
	void distInitHostOfHostnameIsNotResolved() {
		assertThat(HostPort.distInitBootstrapHost("node-0:5000")).isEqualTo("node-0");
		assertThat(HostPort.distInitBootstrapHost("prefill-0.kv.svc.cluster.local:5000"))
				.isEqualTo("prefill-0.kv.svc.cluster.local");
		assertThat(HostPort.distInitBootstrapHost("no-such-host.invalid:1")).isEqualTo("no-such-host.invalid");
		assertThat(HostPort.distInitBootstrapHost("node-0")).isEqualTo("node-0");
	}

	@Test
	void distInitHostOfBracketedIpv6DropsTheBrackets() {
		assertThat(HostPort.distInitBootstrapHost("[2001:db8::1]:5000")).isEqualTo("2001:db8::1");
		assertThat(HostPort.distInitBootstrapHost("[2001:db8::1]")).isEqualTo("2001:db8::1");
		assertThat(HostPort.distInitBootstrapHost("[::1]:")).isEqualTo("::1");
		// The host is ready for HostPort, which brackets it again when formatting.
		assertThat(new HostPort(HostPort.distInitBootstrapHost("[fd00::2]:5000"), 8998).httpUrl())
				.isEqualTo("http://[fd00::2]:8998");
	}

	@Test
	void distInitHostRejectsAmbiguousAndBrokenValues() {
		for (String bad : new String[] { "2001:db8::1", "::1:5000", "fe80::1" }) {
			assertThatIllegalArgumentException().as(bad).isThrownBy(() -> HostPort.distInitBootstrapHost(bad))
					.withMessageContaining("ambiguous");
		}
		for (String bad : new String[] { "", "  ", ":5000", "[]:5000", "[]", "[::1", "[::1]5000", "[::1]x:1",
				"a]:5", "[a[b]:1" }) {
			assertThatIllegalArgumentException().as(bad).isThrownBy(() -> HostPort.distInitBootstrapHost(bad))
					.withMessageContaining("dist_init_addr");
		}
		assertThatNullPointerException().isThrownBy(() -> HostPort.distInitBootstrapHost(null))
				.withMessage("distInitAddr");
	}
}
