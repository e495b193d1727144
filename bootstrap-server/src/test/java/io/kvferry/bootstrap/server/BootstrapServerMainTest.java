package io.kvferry.bootstrap.server;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/** The standalone entry point's command line: help, bad options and an unusable address. */
class BootstrapServerMainTest {

	private final StringWriter out = new StringWriter();
	private final StringWriter err = new StringWriter();

	@Test
	void printsHelpAndExitsZero() {
		assertThat(run("--help")).isZero();
		assertThat(out.toString()).contains("--host", "--port", "--max-body-bytes", "8998", "0.0.0.0");
		assertThat(err.toString()).isEmpty();
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = { "--bogus|Unknown option", "--port abc|--port", "--port 70000|port : 70000",
			"--max-body-bytes 0|maxBodyBytes : 0", "--host|--host", "--dp-rank-entry-lifetime-seconds 0|lifetime" })
	void exitsTwoWithAMessageForBadOptions(String args, String message) {
		assertThat(run(args.split(" "))).isEqualTo(BootstrapServerMain.EXIT_USAGE);
		assertThat(err.toString()).contains(message);
	}

	@Test
	void exitsTwoWithAMessageWhenThePortIsInUse() throws IOException {
		try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
			int port = taken.getLocalPort();
			assertThat(run("--host", "127.0.0.1", "--port", Integer.toString(port)))
					.isEqualTo(BootstrapServerMain.EXIT_USAGE);
			assertThat(err.toString()).contains("cannot listen on 127.0.0.1:" + port);
		}
	}

	private int run(String... args) {
		return BootstrapServerMain.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
	}
}
