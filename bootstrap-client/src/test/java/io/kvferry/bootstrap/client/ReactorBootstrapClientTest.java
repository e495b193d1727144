package io.kvferry.bootstrap.client;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import ch.qos.logback.classic.Level;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.test.DeafListener;
import io.netty.handler.codec.http.HttpHeaderNames;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

/**
 * {@link ReactorBootstrapClient} against scripted HTTP servers on loopback: what goes on the wire, how answers and
 * failures map to {@link BootstrapException}s, timeouts, and the registration retry schedule on virtual time.
 */
class ReactorBootstrapClientTest {

	private static final Duration VERIFY = Duration.ofSeconds(15);

	private static final ObjectMapper JSON = new ObjectMapper();

	private static final PrefillRegistration REGISTRATION = PrefillRegistration.prefill(
			new ParallelLayout(4, 1, 2, 1, 1, 0, 2, 1), "10.1.2.3", 17001, 16);

	private static final String PARALLEL_INFO = "{\"prefill_attn_tp_size\":4,\"prefill_dp_size\":2,"
			+ "\"prefill_pp_size\":2,\"prefill_page_size\":16}";

	private static final String NOT_READY_TEXT = "Prefill server not fully registered yet (3 workers registered).";

	private final List<AutoCloseable> resources = new ArrayList<>();

	@AfterEach
	void closeResources() throws Exception {
		for (int i = resources.size() - 1; i >= 0; i--) {
			resources.get(i).close();
		}
	}

	private HttpStub stub(HttpStub.Responder responder) {
		HttpStub stub = HttpStub.start(responder);
		resources.add(stub);
		return stub;
	}

	private ReactorBootstrapClient track(ReactorBootstrapClient client) {
		resources.add(client::dispose);
		return client;
	}

	private LogCapture captureLogs() {
		LogCapture logs = LogCapture.of(ReactorBootstrapClient.class);
		resources.add(logs);
		return logs;
	}

	private static HostPort refusedAddress() throws IOException {
		// A port that was free a moment ago and has no listener now.
		try (ServerSocket socket = new ServerSocket()) {
			socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
			return new HostPort("127.0.0.1", socket.getLocalPort());
		}
	}

	private static BootstrapException bootstrapFailure(Throwable error) {
		assertThat(error).isInstanceOf(BootstrapException.class);
		return (BootstrapException) error;
	}

	// ---- register: request shape

	@Test
	void registerPutsSglangFieldsAsJsonOnRoute() throws IOException {
		HttpStub stub = stub(HttpStub.status(200, "OK"));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.register(stub.address(), REGISTRATION)).expectComplete().verify(VERIFY);

		HttpStub.Request request = stub.nextRequest();
		assertThat(request.method()).isEqualTo("PUT");
		assertThat(request.uri()).isEqualTo("/route");
		assertThat(request.headers().get(HttpHeaderNames.CONTENT_TYPE)).isEqualTo("application/json");
		assertThat(request.headers().contains(HttpHeaderNames.AUTHORIZATION)).isFalse();
		JsonNode body = JSON.readTree(request.body());
		List<String> names = new ArrayList<>();
		body.fieldNames().forEachRemaining(names::add);
		assertThat(names).containsExactly("role", "attn_tp_size", "attn_tp_rank", "attn_dp_size", "attn_dp_rank",
				"pp_size", "pp_rank", "system_dp_size", "system_dp_rank", "rank_ip", "rank_port", "page_size");
		assertThat(body.get("role").textValue()).isEqualTo("Prefill");
		assertThat(body.get("attn_tp_size").intValue()).isEqualTo(4);
		assertThat(body.get("attn_tp_rank").intValue()).isEqualTo(1);
		assertThat(body.get("attn_dp_size").intValue()).isEqualTo(2);
		assertThat(body.get("attn_dp_rank").intValue()).isEqualTo(1);
		assertThat(body.get("pp_size").intValue()).isEqualTo(2);
		assertThat(body.get("pp_rank").intValue()).isEqualTo(1);
		assertThat(body.get("system_dp_size").intValue()).isEqualTo(1);
		assertThat(body.get("system_dp_rank").intValue()).isEqualTo(0);
		assertThat(body.get("rank_ip").textValue()).isEqualTo("10.1.2.3");
		assertThat(body.get("rank_port").intValue()).isEqualTo(17001);
		assertThat(body.get("page_size").intValue()).isEqualTo(16);
	}

	@Test
	void bearerTokenIsSentOnPutOnly() {
		HttpStub stub = stub((n, request, response) -> request.method().equals("PUT")
				? response.status(200).sendString(Mono.just("OK"))
				: response.status(200).sendString(Mono.just(PARALLEL_INFO)));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().bearerToken("s3cr3t-t0ken"));

		StepVerifier.create(client.register(stub.address(), REGISTRATION).then(client.parallelInfo(stub.address())))
				.expectNext(new PrefillParallelInfo(4, 2, 2, 16))
				.expectComplete()
				.verify(VERIFY);

		List<HttpStub.Request> requests = stub.requests();
		assertThat(requests).extracting(HttpStub.Request::method).containsExactly("PUT", "GET");
		assertThat(requests.get(0).headers().get(HttpHeaderNames.AUTHORIZATION)).isEqualTo("Bearer s3cr3t-t0ken");
		assertThat(requests.get(1).headers().contains(HttpHeaderNames.AUTHORIZATION)).isFalse();
	}

	@Test
	void registerWithoutTokenMapsUnauthorizedAndDoesNotRetry() {
		HttpStub stub = stub(HttpStub.status(401, "Unauthorized: missing bearer token"));
		DelayRecordingScheduler timer = new DelayRecordingScheduler();
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().scheduler(timer));

		StepVerifier.create(client.register(stub.address(), REGISTRATION))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.UNAUTHORIZED);
					assertThat(failure.status()).isEqualTo(401);
					assertThat(failure.getMessage()).contains("after 1 attempt;", "missing bearer token");
				})
				.verify(VERIFY);

		assertThat(stub.count()).isEqualTo(1);
		assertThat(timer.hasPendingDelay()).isFalse();
	}

	// ---- register: retries on virtual time

	@Test
	void registerRetriesWithSglangBackoffThenFailsNamingAttemptsAndLastCause() {
		HttpStub stub = stub(HttpStub.status(503, NOT_READY_TEXT));
		DelayRecordingScheduler timer = new DelayRecordingScheduler();
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().scheduler(timer).jitter(() -> 0.75));
		LogCapture logs = captureLogs();
		List<Duration> delays = new ArrayList<>();

		StepVerifier.create(client.register(stub.address(), REGISTRATION))
				.then(() -> {
					for (int retry = 0; retry < 4; retry++) {
						Duration delay = timer.nextDelay();
						// The delay is scheduled only after the answer to the attempt before it arrived.
						assertThat(stub.count()).isEqualTo(retry + 1);
						delays.add(delay);
						timer.advance(delay);
					}
				})
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.NOT_READY);
					assertThat(failure.status()).isEqualTo(503);
					assertThat(failure.getMessage())
							.contains("after 5 attempts", "http://" + stub.address() + "/route", NOT_READY_TEXT);
					assertThat(failure.getCause()).isInstanceOf(BootstrapException.class);
				})
				.verify(VERIFY);

		assertThat(delays).containsExactly(Duration.ofMillis(750), Duration.ofMillis(1500), Duration.ofSeconds(3),
				Duration.ofSeconds(6));
		assertThat(timer.now(TimeUnit.MILLISECONDS)).isEqualTo(11_250);
		assertThat(stub.count()).isEqualTo(5);
		assertThat(timer.hasPendingDelay()).isFalse();
		assertThat(logs.messages(Level.WARN)).hasSize(4);
		assertThat(logs.messages(Level.ERROR)).singleElement().asString().contains("after 5 attempts", NOT_READY_TEXT);
	}

	@Test
	void registerSucceedsWhenTheServerRecoversBeforeTheLastAttempt() {
		HttpStub stub = stub((n, request, response) -> switch (n) {
			case 1 -> response.status(503).sendString(Mono.just(NOT_READY_TEXT));
			case 2 -> response.status(500).sendString(Mono.just("Internal Server Error"));
			default -> response.status(200).sendString(Mono.just("OK"));
		});
		DelayRecordingScheduler timer = new DelayRecordingScheduler();
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().scheduler(timer).jitter(() -> 0.75));
		LogCapture logs = captureLogs();
		List<Duration> delays = new ArrayList<>();

		StepVerifier.create(client.register(stub.address(), REGISTRATION))
				.then(() -> {
					for (int retry = 0; retry < 2; retry++) {
						Duration delay = timer.nextDelay();
						delays.add(delay);
						timer.advance(delay);
					}
				})
				.expectComplete()
				.verify(VERIFY);

		assertThat(delays).containsExactly(Duration.ofMillis(750), Duration.ofMillis(1500));
		assertThat(stub.count()).isEqualTo(3);
		assertThat(logs.messages(Level.ERROR)).isEmpty();
	}

	@Test
	void registerFailsAtOnceOnBadRequest() {
		HttpStub stub = stub(HttpStub.status(400, "Missing or invalid field 'rank_port'."));
		DelayRecordingScheduler timer = new DelayRecordingScheduler();
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().scheduler(timer));
		LogCapture logs = captureLogs();

		StepVerifier.create(client.register(stub.address(), REGISTRATION))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.BAD_REQUEST);
					assertThat(failure.status()).isEqualTo(400);
					assertThat(failure.isRetryable()).isFalse();
					assertThat(failure.getMessage()).contains("after 1 attempt;", "PUT http://" + stub.address(),
							"Missing or invalid field 'rank_port'.");
				})
				.verify(VERIFY);

		assertThat(stub.count()).isEqualTo(1);
		assertThat(timer.hasPendingDelay()).isFalse();
		assertThat(logs.messages(Level.ERROR)).hasSize(1);
	}

	@Test
	void registerRetriesAnUnreachableServer() throws IOException {
		HostPort nobody = refusedAddress();
		DelayRecordingScheduler timer = new DelayRecordingScheduler();
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create()
				.scheduler(timer)
				.jitter(() -> 1.0)
				.registerAttempts(2)
				.backoff(Duration.ofMillis(300), Duration.ofSeconds(1)));

		StepVerifier.create(client.register(nobody, REGISTRATION))
				.then(() -> timer.advance(timer.nextDelay()))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.UNREACHABLE);
					assertThat(failure.status()).isZero();
					assertThat(failure.getMessage()).contains("after 2 attempts", "http://" + nobody + "/route");
				})
				.verify(VERIFY);

		assertThat(timer.now(TimeUnit.MILLISECONDS)).isEqualTo(300);
		assertThat(timer.hasPendingDelay()).isFalse();
	}

	@Test
	void defaultJitterKeepsTheFirstDelayBetweenThreeQuartersAndOneBase() {
		HttpStub stub = stub(HttpStub.status(503, NOT_READY_TEXT));
		DelayRecordingScheduler timer = new DelayRecordingScheduler();
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().scheduler(timer).registerAttempts(2));
		List<Duration> delays = new ArrayList<>();

		StepVerifier.create(client.register(stub.address(), REGISTRATION))
				.then(() -> {
					Duration delay = timer.nextDelay();
					delays.add(delay);
					timer.advance(delay);
				})
				.expectError(BootstrapException.class)
				.verify(VERIFY);

		assertThat(delays).singleElement()
				.satisfies(delay -> assertThat(delay).isGreaterThanOrEqualTo(Duration.ofMillis(750))
						.isLessThan(Duration.ofSeconds(1)));
	}

	@Test
	void registerSignalsAJitterThatIsNotAFiniteNonNegativeNumber() {
		HttpStub stub = stub(HttpStub.status(503, NOT_READY_TEXT));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().jitter(() -> Double.NaN));

		StepVerifier.create(client.register(stub.address(), REGISTRATION))
				.expectErrorSatisfies(error -> assertThat(error)
						.isInstanceOf(IllegalArgumentException.class)
						.hasMessage("jitter : NaN (expected: a finite value >= 0)"))
				.verify(VERIFY);
	}

	@Test
	void eachRegisterSubscriptionStartsWithAFullAttemptBudget() {
		HttpStub stub = stub(HttpStub.status(503, NOT_READY_TEXT));
		DelayRecordingScheduler timer = new DelayRecordingScheduler();
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().scheduler(timer).registerAttempts(2));
		Mono<Void> registration = client.register(stub.address(), REGISTRATION);

		for (int round = 1; round <= 2; round++) {
			StepVerifier.create(registration)
					.then(() -> timer.advance(timer.nextDelay()))
					.expectErrorSatisfies(error -> assertThat(error).hasMessageContaining("after 2 attempts"))
					.verify(VERIFY);
			assertThat(stub.count()).isEqualTo(2 * round);
		}
	}

	// ---- answers and failures

	@ParameterizedTest
	@CsvSource({
			"400, BAD_REQUEST, false, Missing inputs for bootstrap server.",
			"401, UNAUTHORIZED, false, Unauthorized",
			"404, NOT_FOUND, false, Bootstrap info not found for dp_rank=1 tp_rank=3 pp_rank=0",
			"503, NOT_READY, true, Prefill server not fully registered yet (3 workers registered).",
			"500, OTHER, true, Internal Server Error",
			"502, OTHER, true, Bad Gateway",
			"418, OTHER, false, I'm a teapot",
	})
	void statusesMapToKindsAndMessagesQuoteTheServerAndNameTheUrl(int status, Kind kind, boolean retryable,
			String text) {
		HttpStub stub = stub(HttpStub.status(status, text));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.rankEndpoint(stub.address(), 1, 3, 0))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(kind);
					assertThat(failure.status()).isEqualTo(status);
					assertThat(failure.isRetryable()).isEqualTo(retryable);
					assertThat(failure.getMessage()).startsWith("GET http://" + stub.address()
							+ "/route?engine_rank=3&target_dp_group=1&target_pp_rank=0: " + status).contains(text);
				})
				.verify(VERIFY);
	}

	@Test
	void healthCompletesOnOk() {
		HttpStub stub = stub(HttpStub.status(200, "OK"));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.health(stub.address())).expectComplete().verify(VERIFY);

		HttpStub.Request request = stub.nextRequest();
		assertThat(request.method()).isEqualTo("GET");
		assertThat(request.uri()).isEqualTo("/health");
	}

	@Test
	void healthFailsOnAnyOtherStatus() {
		HttpStub stub = stub(HttpStub.status(503, "shutting down"));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.health(stub.address()))
				.expectErrorSatisfies(error -> assertThat(bootstrapFailure(error).getMessage())
						.isEqualTo("GET http://" + stub.address() + "/health: 503 Service Unavailable: shutting down"))
				.verify(VERIFY);
	}

	@Test
	void aServerThatNeverAnswersTimesOut() {
		HttpStub stub = stub(HttpStub.silent());
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().timeout(Duration.ofMillis(200)));

		StepVerifier.create(client.parallelInfo(stub.address()))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.TIMEOUT);
					assertThat(failure.status()).isZero();
					assertThat(failure.isRetryable()).isTrue();
					assertThat(failure.getMessage()).isEqualTo("GET http://" + stub.address()
							+ "/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1: no answer within 200 ms");
				})
				.verify(VERIFY);
	}

	@Test
	void registerTimesOutPerAttempt() {
		HttpStub stub = stub(HttpStub.silent());
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create()
				.timeout(Duration.ofMillis(200))
				.registerAttempts(1));

		StepVerifier.create(client.register(stub.address(), REGISTRATION))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.TIMEOUT);
					assertThat(failure.getMessage()).contains("after 1 attempt;", "no answer within 200 ms");
				})
				.verify(VERIFY);
	}

	@Test
	void aOneDigitPortIsAPortNotPartOfTheHostName() {
		// Nothing listens on port 1 of the loopback: the answer is a refusal, not an unknown host "127.0.0.1:1".
		HostPort nobody = new HostPort("127.0.0.1", 1);
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());
		StepVerifier.create(client.health(nobody))
				.expectErrorSatisfies(error -> assertThat(bootstrapFailure(error).getMessage())
						.startsWith("GET http://127.0.0.1:1/health: cannot connect: connection refused by 127.0.0.1:1"))
				.verify(VERIFY);
	}

	@Test
	void connectionRefusedIsUnreachable() throws IOException {
		HostPort nobody = refusedAddress();
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.health(nobody))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.UNREACHABLE);
					assertThat(failure.status()).isZero();
					assertThat(failure.isRetryable()).isTrue();
					assertThat(failure.getMessage()).startsWith("GET http://" + nobody + "/health: cannot connect: "
							+ "connection refused by " + nobody + " (nothing listens on that port");
				})
				.verify(VERIFY);
	}

	@Test
	void anUnknownHostIsUnreachable() {
		// ".invalid" never resolves (RFC 6761); the long timeout leaves room for a slow resolver to say so.
		HostPort nowhere = new HostPort("kvferry-no-such-host.invalid", 8998);
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().timeout(Duration.ofSeconds(30)));

		StepVerifier.create(client.health(nowhere))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.UNREACHABLE);
					assertThat(failure.getMessage())
							.startsWith("GET http://kvferry-no-such-host.invalid:8998/health: cannot connect: unknown "
									+ "host: the name of kvferry-no-such-host.invalid:8998 does not resolve");
				})
				.verify(Duration.ofSeconds(45));
	}

	@Test
	void aServerThatNeverAcceptsIsATimeoutToConnectNotAnAnswerThatDidNotCome() {
		try (DeafListener deaf = DeafListener.open()) {
			HostPort address = deaf.address();
			ReactorBootstrapClient client = track(ReactorBootstrapClient.create().timeout(Duration.ofMillis(500)));

			StepVerifier.create(client.health(address))
					.expectErrorSatisfies(error -> {
						BootstrapException failure = bootstrapFailure(error);
						assertThat(failure.kind()).isEqualTo(Kind.TIMEOUT);
						assertThat(failure.isRetryable()).isTrue();
						assertThat(failure.getMessage()).isEqualTo("GET http://" + address + "/health: could not connect "
								+ "within 500 ms: " + address + " did not accept the connection in time (the host is "
								+ "down, or a firewall drops its packets)");
					})
					.verify(VERIFY);
		}
	}

	@Test
	void aConnectionClosedBeforeTheAnswerIsUnreachable() {
		HttpStub stub = stub(HttpStub.hangUp());
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.health(stub.address()))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.UNREACHABLE);
					assertThat(failure.getMessage()).startsWith("GET http://" + stub.address() + "/health: ");
				})
				.verify(VERIFY);
	}

	@Test
	void anAnswerLargerThanTheLimitIsRefused() {
		HttpStub stub = stub(HttpStub.json("{\"padding\":\"" + "x".repeat(4096) + "\"}"));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create().maxResponseBytes(1024));

		StepVerifier.create(client.parallelInfo(stub.address()))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.OTHER);
					assertThat(failure.getMessage()).contains("http://" + stub.address(),
							"answer larger than 1024 bytes");
				})
				.verify(VERIFY);
	}

	// ---- parallel info and rank look-up

	@Test
	void parallelInfoAsksWithMinusOnesAndReadsTheFourSizes() {
		HttpStub stub = stub(HttpStub.json(PARALLEL_INFO));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.parallelInfo(stub.address()))
				.expectNext(new PrefillParallelInfo(4, 2, 2, 16))
				.expectComplete()
				.verify(VERIFY);

		HttpStub.Request request = stub.nextRequest();
		assertThat(request.method()).isEqualTo("GET");
		assertThat(request.uri()).isEqualTo("/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1");
	}

	@Test
	void parallelInfoIgnoresUnknownFields() {
		HttpStub stub = stub(HttpStub.json("{\"prefill_http_port\":30000,\"prefill_attn_tp_size\":8,"
				+ "\"kv_cache_dtype\":\"fp8_e4m3\",\"prefill_dp_size\":1,\"prefill_pp_size\":1,"
				+ "\"target_tp_ranks\":null,\"extra\":{\"nested\":[1,2,3]},\"prefill_page_size\":64}"));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.parallelInfo(stub.address()))
				.expectNext(new PrefillParallelInfo(8, 1, 1, 64))
				.expectComplete()
				.verify(VERIFY);
	}

	@ParameterizedTest
	@ValueSource(strings = {"prefill_attn_tp_size", "prefill_dp_size", "prefill_pp_size", "prefill_page_size"})
	void parallelInfoNamesAMissingOrNullField(String field) {
		String withoutField = PARALLEL_INFO.replaceAll("\"" + field + "\":\\d+,?", "").replace(",}", "}");
		String withNull = PARALLEL_INFO.replace("\"" + field + "\":", "\"" + field + "\":null,\"was\":");
		HttpStub stub = stub((n, request, response) -> response.status(200)
				.sendString(Mono.just(n == 1 ? withoutField : withNull)));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		for (int round = 0; round < 2; round++) {
			StepVerifier.create(client.parallelInfo(stub.address()))
					.expectErrorSatisfies(error -> {
						BootstrapException failure = bootstrapFailure(error);
						assertThat(failure.kind()).isEqualTo(Kind.OTHER);
						assertThat(failure.isRetryable()).isFalse();
						assertThat(failure.getMessage()).contains("http://" + stub.address() + "/route",
								"'" + field + "'");
					})
					.verify(VERIFY);
		}
	}

	@Test
	void parallelInfoThatIsNotJsonIsOther() {
		HttpStub stub = stub(HttpStub.status(200, "OK"));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.parallelInfo(stub.address()))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.OTHER);
					assertThat(failure.getMessage()).contains("http://" + stub.address(), "not JSON");
				})
				.verify(VERIFY);
	}

	@Test
	void rankEndpointAsksForTheRankAndReadsItsEndpoint() {
		HttpStub stub = stub(HttpStub.json("{\"rank_ip\":\"10.0.0.9\",\"rank_port\":17005,\"is_dummy\":false}"));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		StepVerifier.create(client.rankEndpoint(stub.address(), 1, 5, 2))
				.expectNext(new HostPort("10.0.0.9", 17005))
				.expectComplete()
				.verify(VERIFY);

		assertThat(stub.nextRequest().uri()).isEqualTo("/route?engine_rank=5&target_dp_group=1&target_pp_rank=2");
	}

	@Test
	void ipv6BootstrapAddressesAndRankEndpointsWork() {
		HttpStub stub = HttpStub.start("::1", HttpStub.json("{\"rank_ip\":\"fd00::7\",\"rank_port\":17000}"));
		resources.add(stub);
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());
		HostPort bootstrap = HostPort.parse("[::1]:" + stub.address().port());

		StepVerifier.create(client.rankEndpoint(bootstrap, 0, 0, 0))
				.assertNext(endpoint -> {
					assertThat(endpoint).isEqualTo(new HostPort("fd00::7", 17000));
					assertThat(endpoint.toString()).isEqualTo("[fd00::7]:17000");
				})
				.expectComplete()
				.verify(VERIFY);
		assertThat(stub.nextRequest().headers().get(HttpHeaderNames.HOST)).isEqualTo(bootstrap.toString());
	}

	@Test
	void rankEndpointRejectsNegativeRanksAtOnce() {
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());
		HostPort bootstrap = new HostPort("127.0.0.1", 8998);

		assertThatIllegalArgumentException().isThrownBy(() -> client.rankEndpoint(bootstrap, -1, 0, 0))
				.withMessage("dpGroup : -1 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> client.rankEndpoint(bootstrap, 0, -2, 0))
				.withMessage("tpRank : -2 (expected: >= 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> client.rankEndpoint(bootstrap, 0, 0, -1))
				.withMessage("ppRank : -1 (expected: >= 0)");
	}

	// ---- laziness, lifecycle, configuration

	@Test
	void nothingIsSentBeforeSubscriptionAndEachSubscriptionSendsAgain() {
		HttpStub stub = stub((n, request, response) -> response.status(200).sendString(Mono.just(
				request.uri().equals("/health") ? "OK" : PARALLEL_INFO)));
		ReactorBootstrapClient client = track(ReactorBootstrapClient.create());

		Mono<Void> registration = client.register(stub.address(), REGISTRATION);
		Mono<PrefillParallelInfo> info = client.parallelInfo(stub.address());
		client.rankEndpoint(stub.address(), 0, 0, 0);
		StepVerifier.create(client.health(stub.address())).expectComplete().verify(VERIFY);
		assertThat(stub.requests()).extracting(HttpStub.Request::uri).containsExactly("/health");

		StepVerifier.create(registration).expectComplete().verify(VERIFY);
		StepVerifier.create(registration).expectComplete().verify(VERIFY);
		StepVerifier.create(info).expectNextCount(1).expectComplete().verify(VERIFY);
		assertThat(stub.requests()).extracting(HttpStub.Request::method).containsExactly("GET", "PUT", "PUT", "GET");
		assertThat(stub.requests()).extracting(HttpStub.Request::uri).doesNotContain(
				"/route?engine_rank=0&target_dp_group=0&target_pp_rank=0");
	}

	@Test
	void callsAfterDisposeFailWithoutSending() {
		HttpStub stub = stub(HttpStub.status(200, "OK"));
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		StepVerifier.create(client.health(stub.address())).expectComplete().verify(VERIFY);

		client.dispose();
		client.dispose();

		assertThat(client.isDisposed()).isTrue();
		StepVerifier.create(client.health(stub.address()))
				.expectErrorSatisfies(error -> {
					BootstrapException failure = bootstrapFailure(error);
					assertThat(failure.kind()).isEqualTo(Kind.OTHER);
					assertThat(failure.getMessage()).isEqualTo("GET http://" + stub.address()
							+ "/health: bootstrap client disposed");
				})
				.verify(VERIFY);
		assertThat(stub.count()).isEqualTo(1);
	}

	@Test
	void aClientThatNeverCalledDisposesCleanly() {
		ReactorBootstrapClient client = ReactorBootstrapClient.create();
		assertThat(client.isDisposed()).isFalse();

		client.dispose();

		assertThat(client.isDisposed()).isTrue();
	}

	@Test
	void settersReturnNewClientsAndLeaveTheOriginalAsItWas() {
		HttpStub stub = stub(HttpStub.status(503, NOT_READY_TEXT));
		DelayRecordingScheduler timer = new DelayRecordingScheduler();
		ReactorBootstrapClient once = track(ReactorBootstrapClient.create().scheduler(timer).registerAttempts(1));
		ReactorBootstrapClient twice = track(once.registerAttempts(2));

		assertThat(twice).isNotSameAs(once);
		StepVerifier.create(once.register(stub.address(), REGISTRATION))
				.expectErrorSatisfies(error -> assertThat(error).hasMessageContaining("after 1 attempt;"))
				.verify(VERIFY);
		assertThat(timer.hasPendingDelay()).isFalse();
		assertThat(stub.count()).isEqualTo(1);
	}

	@Test
	void invalidSettingsAreRejectedNamingTheSetting() {
		ReactorBootstrapClient client = ReactorBootstrapClient.create();

		assertThatIllegalArgumentException().isThrownBy(() -> client.timeout(Duration.ZERO))
				.withMessage("timeout : PT0S (expected: > 0)");
		assertThatIllegalArgumentException().isThrownBy(() -> client.registerAttempts(0))
				.withMessage("registerAttempts : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> client.backoff(Duration.ofMillis(-1), Duration.ZERO))
				.withMessage("base : PT-0.001S (expected: > 0)");
		assertThatIllegalArgumentException()
				.isThrownBy(() -> client.backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
				.withMessage("cap : PT1S (expected: >= base PT2S)");
		assertThatIllegalArgumentException().isThrownBy(() -> client.maxResponseBytes(0))
				.withMessage("maxResponseBytes : 0 (expected: >= 1)");
		assertThatIllegalArgumentException().isThrownBy(() -> client.bearerToken("two words"))
				.withMessageContaining("token");
		assertThatNullPointerException().isThrownBy(() -> client.timeout(null)).withMessage("timeout");
		assertThatNullPointerException().isThrownBy(() -> client.jitter(null)).withMessage("jitter");
		assertThatNullPointerException().isThrownBy(() -> client.scheduler(null)).withMessage("scheduler");
		assertThatNullPointerException().isThrownBy(() -> client.health(null)).withMessage("bootstrap");
		assertThatNullPointerException()
				.isThrownBy(() -> client.register(new HostPort("127.0.0.1", 1), null))
				.withMessage("registration");
	}

	@Test
	void backoffDoublesFromTheBaseUpToTheCapThenScalesByJitter() {
		Duration base = Duration.ofSeconds(1);
		Duration cap = Duration.ofSeconds(30);

		assertThat(RegisterRetry.backoffDelay(0, base, cap, 1.0)).isEqualTo(Duration.ofSeconds(1));
		assertThat(RegisterRetry.backoffDelay(3, base, cap, 1.0)).isEqualTo(Duration.ofSeconds(8));
		assertThat(RegisterRetry.backoffDelay(4, base, cap, 1.0)).isEqualTo(Duration.ofSeconds(16));
		assertThat(RegisterRetry.backoffDelay(5, base, cap, 1.0)).isEqualTo(Duration.ofSeconds(30));
		assertThat(RegisterRetry.backoffDelay(5, base, cap, 0.75)).isEqualTo(Duration.ofMillis(22_500));
		assertThat(RegisterRetry.backoffDelay(Long.MAX_VALUE, base, cap, 0.5))
				.isEqualTo(Duration.ofSeconds(15));
		assertThat(RegisterRetry.backoffDelay(2, base, cap, 0.0)).isEqualTo(Duration.ZERO);
		assertThat(RegisterRetry.backoffDelay(200, base, Duration.ofSeconds(Long.MAX_VALUE), 2.0))
				.isEqualTo(Duration.ofNanos(Long.MAX_VALUE));
		assertThatIllegalArgumentException()
				.isThrownBy(() -> RegisterRetry.backoffDelay(0, base, cap, -0.1))
				.withMessage("jitter : -0.1 (expected: a finite value >= 0)");
		assertThatIllegalArgumentException()
				.isThrownBy(() -> RegisterRetry.backoffDelay(0, base, cap, Double.POSITIVE_INFINITY))
				.withMessage("jitter : Infinity (expected: a finite value >= 0)");
	}
}
