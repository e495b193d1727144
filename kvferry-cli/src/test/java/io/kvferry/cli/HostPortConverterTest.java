package io.kvferry.cli;

import io.kvferry.HostPort;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HostPortConverterTest {

	private final HostPortConverter converter = new HostPortConverter();

	@Test
	void readsIpv4Ipv6AndHostnames() {
		assertThat(converter.convert("127.0.0.1:8998")).isEqualTo(new HostPort("127.0.0.1", 8998));
		assertThat(converter.convert("[::1]:9000")).isEqualTo(new HostPort("::1", 9000));
		assertThat(converter.convert("prefill-0.local:1234")).isEqualTo(new HostPort("prefill-0.local", 1234));
	}

	@Test
	void rejectsAnAddressWithoutPortSayingWhatIsExpected() {
		assertThatThrownBy(() -> converter.convert("localhost"))
				.isInstanceOf(CommandLine.TypeConversionException.class)
				.hasMessageContaining("localhost")
				.hasMessageContaining("expected: host:port");
	}
}
