package io.kvferry.bootstrap.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.bootstrap.server.RawHttp.Answer;
import io.kvferry.bootstrap.server.RawHttp.Mode;
import io.kvferry.bootstrap.server.internal.ConnectionLimit;
import io.kvferry.bootstrap.server.internal.DefaultDisposableBootstrapServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The cap on open connections: one over it gets a 503 naming the cap, or beyond the lingering budget is closed at once;
 * the open ones keep working and a burst never makes the server hold more sockets than both caps.
 */
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
	void aBurstOfRefusedConnectionsHoldsAtMostTheLingeringBudgetAndTheOpenOnesKeepWorking() throws IOException {
		int burst = 40;
		PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
		DisposableBootstrapServer capped = BootstrapServer.create().host("127.0.0.1").port(0).maxConnections(2)
				.maxLingeringRefusals(3).metrics(registry).bindNow();
		ConnectionLimit limit = ((DefaultDisposableBootstrapServer) capped).connectionLimit();
		int port = capped.address().port();
		List<Socket> refused = new ArrayList<>();
		try (Socket first = open(port); Socket second = open(port)) {
			assertThat(health(first)).startsWith("HTTP/1.1 200");
			assertThat(health(second)).startsWith("HTTP/1.1 200");

			long start = System.nanoTime();
			// All at once and all kept open by this side: an answered refusal then lingers until the server's timer.
			for (int i = 0; i < burst; i++) {
				Socket socket = open(port);
				refused.add(socket);
				socket.getOutputStream().write(HEALTH);
				socket.getOutputStream().flush();
			}
			int answered = 0;
			int closedWithoutAnswer = 0;
			for (Socket socket : refused) {
				// Every refused connection ends its side: a 503 then end of stream, or nothing at all.
				String answer = readUntilClosed(socket);
				if (answer.isEmpty()) {
					closedWithoutAnswer++;
				}
				else {
					assertThat(answer).startsWith("HTTP/1.1 503").endsWith("at most 2 open\n");
					answered++;
				}
			}
			long elapsed = System.nanoTime() - start;

			// Each refused connection has been seen by the server once its end of stream arrived here.
			assertThat(limit.refusedConnections()).isEqualTo(burst);
			assertThat(limit.answeredRefusals()).isEqualTo(answered);
			assertThat(limit.closedWithoutAnswer()).isEqualTo(closedWithoutAnswer);
			assertThat(limit.peakSockets()).as("sockets held at once").isLessThanOrEqualTo(2 + 3);
			assertThat(limit.openConnections()).isEqualTo(2);
			if (elapsed < ConnectionLimit.LINGER.toNanos()) {
				// The first three refusals still linger: every later one was closed at once.
				assertThat(answered).isEqualTo(3);
			}
			assertThat(answered).isPositive();

			assertThat(health(first)).startsWith("HTTP/1.1 200");
			assertThat(health(second)).startsWith("HTTP/1.1 200");
			assertThat(registry.get("kvferry.bootstrap.connections.refused").tag("answer", "503").functionCounter()
					.count()).isEqualTo(limit.answeredRefusals());
			assertThat(registry.get("kvferry.bootstrap.connections.refused").tag("answer", "none").functionCounter()
					.count()).isEqualTo(limit.closedWithoutAnswer());
			assertThat(registry.get("kvferry.bootstrap.connections.open").gauge().value()).isEqualTo(2);
		}
		finally {
			for (Socket socket : refused) {
				socket.close();
			}
			capped.disposeNow();
			registry.close();
		}
	}

	@Test
	void theCapIsValidated() {
		assertThatThrownBy(() -> BootstrapServer.create().maxConnections(0))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maxConnections : 0 (expected: >= 1)");
		assertThat(BootstrapServer.create().maxConnections()).isEqualTo(BootstrapServer.DEFAULT_MAX_CONNECTIONS);
	}

	/** Reads everything until the server ends its side (end of stream or reset). */
	private static String readUntilClosed(Socket socket) throws IOException {
		ByteArrayOutputStream answer = new ByteArrayOutputStream();
		InputStream in = socket.getInputStream();
		byte[] buffer = new byte[1024];
		try {
			for (int n; (n = in.read(buffer)) >= 0;) {
				answer.write(buffer, 0, n);
			}
		}
		catch (SocketException e) {
			// Reset: the server closed with this side's request unread. What arrived before still counts.
		}
		return answer.toString(StandardCharsets.US_ASCII);
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
