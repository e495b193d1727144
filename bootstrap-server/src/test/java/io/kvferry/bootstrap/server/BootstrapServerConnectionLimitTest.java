package io.kvferry.bootstrap.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import io.kvferry.bootstrap.server.RawHttp.Answer;
import io.kvferry.bootstrap.server.RawHttp.Mode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The cap on open connections: one over it gets a 503 naming the cap; the open ones keep working. */
class BootstrapServerConnectionLimitTest {

	private static final byte[] HEALTH = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
	private static final byte[] HEALTH_CLOSE = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
			.getBytes(StandardCharsets.US_ASCII);

	private final DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0)
			.maxConnections(2).bindNow();

	@AfterEach
	void stop() {
		server.disposeNow();
	}

	@Test
	void aConnectionOverTheCapIsRefusedWithA503AndTheOthersKeepWorking() throws IOException {
		int port = server.address().port();
		try (Socket first = open(port); Socket second = open(port)) {
			// Both are counted once they answered: the server has seen them.
			assertThat(health(first)).startsWith("HTTP/1.1 200");
			assertThat(health(second)).startsWith("HTTP/1.1 200");

			Answer refused = RawHttp.exchange(port, HEALTH_CLOSE, Mode.WHOLE);
			assertThat(refused.status()).as(refused.preview()).isEqualTo(503);
			assertThat(refused.body()).contains("Too many connections", "at most 2 open");

			assertThat(health(first)).startsWith("HTTP/1.1 200");
			assertThat(health(second)).startsWith("HTTP/1.1 200");
		}
		// Closed connections free their places; the server notices a close on its own time, so ask until it did.
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		Answer answer;
		do {
			answer = RawHttp.exchange(port, HEALTH_CLOSE, Mode.WHOLE);
		}
		while (answer.status() == 503 && System.nanoTime() < deadline);
		assertThat(answer.status()).as(answer.preview()).isEqualTo(200);
	}

	@Test
	void theCapIsValidated() {
		assertThatThrownBy(() -> BootstrapServer.create().maxConnections(0))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maxConnections : 0 (expected: >= 1)");
		assertThat(BootstrapServer.create().maxConnections()).isEqualTo(BootstrapServer.DEFAULT_MAX_CONNECTIONS);
	}

	private static Socket open(int port) throws IOException {
		Socket socket = new Socket();
		socket.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
		socket.setSoTimeout((int) RawHttp.READ_TIMEOUT.toMillis());
		return socket;
	}

	/** Sends GET /health on a kept-alive connection and returns the answer's head and body. */
	private static String health(Socket socket) throws IOException {
		OutputStream out = socket.getOutputStream();
		out.write(HEALTH);
		out.flush();
		InputStream in = socket.getInputStream();
		StringBuilder answer = new StringBuilder();
		// "OK" is the body of a health answer: read until it arrived.
		while (!answer.toString().endsWith("\r\n\r\nOK")) {
			int b = in.read();
			if (b < 0) {
				throw new IOException("closed after " + answer);
			}
			answer.append((char) b);
		}
		return answer.toString();
	}
}
