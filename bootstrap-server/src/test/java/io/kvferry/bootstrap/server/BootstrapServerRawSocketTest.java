package io.kvferry.bootstrap.server;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.kvferry.bootstrap.server.RawHttp.Answer;
import io.kvferry.bootstrap.server.RawHttp.Mode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Requests no well-behaved client sends, over a bare socket: malformed percent-encodings, oversized lines and headers,
 * clients that send one byte at a time, stop halfway or never send. Each gets a 4xx or a timely close, never a 5xx.
 */
class BootstrapServerRawSocketTest {

	private static final String REGISTRATION = TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 5000);

	private DisposableBootstrapServer server;

	@AfterEach
	void dispose() {
		if (server != null) {
			server.disposeNow();
		}
	}

	private int bind(BootstrapServer config) {
		server = config.host("127.0.0.1").port(0).bindNow();
		return server.address().port();
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = {
			"GET /route?engine_rank=%zz&target_dp_group=0&target_pp_rank=0|invalid hex byte 'zz'",
			"GET /ro%zzute|invalid hex byte 'zz'",
			"GET /route?engine_rank=%|unterminated escape sequence",
			"GET /health?x=%e|unterminated escape sequence" })
	void answersAMalformedPercentEncodingWith400(String requestLine, String reason) {
		int port = bind(BootstrapServer.create());
		Answer answer = RawHttp.exchange(port, request(requestLine + " HTTP/1.1\r\nHost: x\r\nConnection: close"
				+ "\r\n\r\n"), Mode.WHOLE);
		assertThat(answer.status()).isEqualTo(400);
		assertThat(answer.body()).startsWith("request target : malformed percent-encoding").contains(reason)
				.endsWith("(expected: '%' followed by two hex digits)");
	}

	@Test
	void decodesAWellFormedPercentEncodingBeforeRouting() {
		int port = bind(BootstrapServer.create());
		Answer answer = RawHttp.exchange(port, request("GET /%68ealth HTTP/1.1\r\nHost: x\r\nConnection: close"
				+ "\r\n\r\n"), Mode.WHOLE);
		assertThat(answer.status()).isEqualTo(200);
		assertThat(answer.body()).isEqualTo("OK");
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = { "request line|414", "header|431", "bare line feed|400",
			"conflicting lengths|400", "bad chunk size|400", "http2 preface|400" })
	void refusesMalformedFramingWith4xx(String kind, int status) {
		int port = bind(BootstrapServer.create());
		String request = switch (kind) {
			case "request line" -> "GET /route?x=" + "1".repeat(5000) + " HTTP/1.1\r\nConnection: close\r\n\r\n";
			case "header" -> "GET /health HTTP/1.1\r\nX-Big: " + "b".repeat(9000) + "\r\nConnection: close\r\n\r\n";
			case "bare line feed" -> "GET /health HTTP/1.1\nHost: x\n\n";
			case "conflicting lengths" -> "PUT /route HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}";
			case "bad chunk size" -> "PUT /route HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n";
			default -> "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
		};
		Answer answer = RawHttp.exchange(port, request(request), Mode.WHOLE);
		assertThat(answer.status()).as(answer.preview()).isEqualTo(status);
		assertThat(server.registeredCount()).isZero();
	}

	@Test
	void servesRequestsSentOneByteAtATime() {
		int port = bind(BootstrapServer.create());
		Answer registered = RawHttp.exchange(port, put(REGISTRATION), Mode.BYTE_BY_BYTE);
		assertThat(registered.status()).isEqualTo(200);
		Answer lookup = RawHttp.exchange(port, request("GET /route?engine_rank=0&target_dp_group=0&target_pp_rank=0 "
				+ "HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), Mode.BYTE_BY_BYTE);
		assertThat(lookup.status()).isEqualTo(200);
		assertThat(lookup.body()).isEqualTo("{\"rank_ip\": \"10.0.0.1\", \"rank_port\": 5000}");
		Answer malformed = RawHttp.exchange(port, put("{\"attn_tp_size\": ["), Mode.BYTE_BY_BYTE);
		assertThat(malformed.status()).isEqualTo(400);
		assertThat(malformed.body()).startsWith("request body : malformed JSON");
	}

	@Test
	void closesConnectionsThatNeverSendOnceIdle() throws Exception {
		int port = bind(BootstrapServer.create().idleTimeout(Duration.ofMillis(300)));
		List<Answer> answers = all(10, () -> RawHttp.exchange(port, new byte[0], Mode.SILENT));
		assertThat(answers).allSatisfy(answer -> {
			assertThat(answer.hung()).as("closed within %s", RawHttp.READ_TIMEOUT).isFalse();
			assertThat(answer.bytes()).isEmpty();
		});
	}

	@Test
	void answers408WhenTheHeadersStopHalfwayThoughTheConnectionIsNotIdleYet() throws Exception {
		int port = bind(BootstrapServer.create().idleTimeout(Duration.ofMinutes(5))
				.requestTimeout(Duration.ofMillis(300)));
		List<Answer> answers = all(4, () -> RawHttp.exchange(port, request("GET /health HTTP/1.1\r\nHost: x\r\nX-"),
				Mode.WHOLE));
		assertThat(answers).allSatisfy(answer -> {
			assertThat(answer.status()).as(answer.preview()).isEqualTo(408);
			assertThat(answer.hung()).isFalse();
		});
	}

	@Test
	void answers408WhenTheBodyStopsHalfwayAndKeepsServing() throws Exception {
		int port = bind(BootstrapServer.create().requestTimeout(Duration.ofMillis(300)));
		byte[] half = request("PUT /route HTTP/1.1\r\nHost: x\r\nContent-Length: " + REGISTRATION.length()
				+ "\r\n\r\n" + REGISTRATION.substring(0, REGISTRATION.length() / 2));
		List<Answer> answers = all(4, () -> RawHttp.exchange(port, half, Mode.WHOLE));
		assertThat(answers).allSatisfy(answer -> assertThat(answer.status()).as(answer.preview()).isEqualTo(408));
		assertThat(server.registeredCount()).isZero();
		assertThat(RawHttp.exchange(port, put(REGISTRATION), Mode.WHOLE).status()).isEqualTo(200);
		assertThat(server.registeredCount()).isEqualTo(1);
	}

	@Test
	void answersGarbageWith400OrClosesWithoutAnswering() {
		int port = bind(BootstrapServer.create());
		Answer garbage = RawHttp.exchange(port, new byte[] { 0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00,
				'\r', '\n', '\r', '\n' }, Mode.HALF_CLOSE);
		assertThat(garbage.hung()).isFalse();
		assertThat(garbage.status() == 400 || garbage.bytes().length == 0).as(garbage.preview()).isTrue();
		assertThat(RawHttp.exchange(port, request("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"), Mode.WHOLE)
				.status()).isEqualTo(200);
	}

	/** Runs {@code count} exchanges at once, so that timed ones overlap. */
	private static List<Answer> all(int count, Supplier<Answer> exchange) throws Exception {
		ExecutorService pool = Executors.newFixedThreadPool(count);
		try {
			List<CompletableFuture<Answer>> futures = new ArrayList<>();
			for (int i = 0; i < count; i++) {
				futures.add(CompletableFuture.supplyAsync(exchange, pool));
			}
			List<Answer> answers = new ArrayList<>();
			for (CompletableFuture<Answer> future : futures) {
				answers.add(future.get(RawHttp.READ_TIMEOUT.toSeconds() * 2, TimeUnit.SECONDS));
			}
			return answers;
		}
		finally {
			pool.shutdownNow();
		}
	}

	private static byte[] put(String json) {
		byte[] body = json.getBytes(StandardCharsets.UTF_8);
		return request("PUT /route HTTP/1.1\r\nHost: x\r\nContent-Length: " + body.length
				+ "\r\nConnection: close\r\n\r\n" + json);
	}

	private static byte[] request(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}
}
