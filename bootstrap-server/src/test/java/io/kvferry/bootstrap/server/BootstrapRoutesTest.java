package io.kvferry.bootstrap.server;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.bootstrap.server.internal.ServerMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The bootstrap routes mounted on an engine's own Reactor Netty server, beside its routes, answer byte for byte what
 * the standalone server answers: the same request sequence (registrations, look-ups in both of SGLang's forms with
 * their {@code -1} sentinels, the room → DP rank table, bad input, wrong methods, oversized bodies) goes to both, one
 * request per connection and then all of them pipelined on one kept-alive connection, and every byte that comes back
 * is compared, status line, headers and body.
 */
class BootstrapRoutesTest {

	private static final Duration TIMEOUT = Duration.ofSeconds(10);
	private static final int MAX_BODY = 1024;
	private static final String TOKEN = "s3cret";

	private final List<DisposableServer> engines = new ArrayList<>();
	private final List<DisposableBootstrapRoutes> mounted = new ArrayList<>();
	private final List<DisposableBootstrapServer> standalones = new ArrayList<>();

	@AfterEach
	void dispose() {
		engines.forEach(e -> e.disposeNow(TIMEOUT));
		mounted.forEach(DisposableBootstrapRoutes::dispose);
		standalones.forEach(DisposableBootstrapServer::disposeNow);
	}

	@Test
	void answersAsTheStandaloneServerByteForByteOneConnectionEach() {
		BootstrapRoutes config = BootstrapRoutes.create().maxBodyBytes(MAX_BODY);
		int standalone = standalone(config);
		int engine = engine(config);

		for (String request : sequence(null)) {
			byte[] bytes = request.getBytes(StandardCharsets.UTF_8);
			RawHttp.Answer expected = RawHttp.exchange(standalone, bytes, RawHttp.Mode.WHOLE);
			RawHttp.Answer actual = RawHttp.exchange(engine, bytes, RawHttp.Mode.WHOLE);
			assertThat(expected.status()).as("standalone's answer to %s", head(request)).isPositive();
			assertThat(text(actual.bytes())).as("mounted answer to %s", head(request))
					.isEqualTo(text(expected.bytes()));
		}
	}

	@Test
	void answersAsTheStandaloneServerByteForBytePipelinedOnOneConnection() {
		BootstrapRoutes config = BootstrapRoutes.create().maxBodyBytes(MAX_BODY);
		int standalone = standalone(config);
		int engine = engine(config);
		StringBuilder all = new StringBuilder();
		// Kept alive up to the last request; the oversized one would close the connection, so it is left out.
		List<String> requests = sequence(null).stream().filter(r -> !r.contains("\"padding\"")).toList();
		for (int i = 0; i < requests.size(); i++) {
			all.append(i == requests.size() - 1 ? requests.get(i)
					: requests.get(i).replace("Connection: close\r\n", ""));
		}
		byte[] bytes = all.toString().getBytes(StandardCharsets.UTF_8);

		RawHttp.Answer expected = RawHttp.exchange(standalone, bytes, RawHttp.Mode.WHOLE);
		RawHttp.Answer actual = RawHttp.exchange(engine, bytes, RawHttp.Mode.WHOLE);

		assertThat(text(expected.bytes()).split("HTTP/1.1 ", -1)).as("standalone's answers").hasSize(
				requests.size() + 1);
		assertThat(text(actual.bytes())).isEqualTo(text(expected.bytes()));
	}

	@Test
	void answersAsTheStandaloneServerWithABearerToken() {
		BootstrapRoutes config = BootstrapRoutes.create().maxBodyBytes(MAX_BODY).authToken(TOKEN);
		int standalone = standalone(config);
		int engine = engine(config);

		for (String request : sequence(TOKEN)) {
			byte[] bytes = request.getBytes(StandardCharsets.UTF_8);
			assertThat(text(RawHttp.exchange(engine, bytes, RawHttp.Mode.WHOLE).bytes()))
					.as("mounted answer to %s", head(request))
					.isEqualTo(text(RawHttp.exchange(standalone, bytes, RawHttp.Mode.WHOLE).bytes()));
		}
		String unauthorized = request("PUT", "/route", registration(0));
		RawHttp.Answer refused = RawHttp.exchange(engine, unauthorized.getBytes(StandardCharsets.UTF_8),
				RawHttp.Mode.WHOLE);
		assertThat(refused.status()).isEqualTo(401);
		assertThat(text(refused.bytes())).contains("www-authenticate: Bearer")
				.isEqualTo(text(RawHttp.exchange(standalone, unauthorized.getBytes(StandardCharsets.UTF_8),
						RawHttp.Mode.WHOLE).bytes()));
	}

	@Test
	void leavesTheEngineItsOwnPaths() {
		int engine = engine(BootstrapRoutes.create());

		RawHttp.Answer health = RawHttp.exchange(engine, bytes(request("GET", "/health", null)), RawHttp.Mode.WHOLE);
		RawHttp.Answer other = RawHttp.exchange(engine, bytes(request("GET", "/routes", null)), RawHttp.Mode.WHOLE);
		RawHttp.Answer undecodable = RawHttp.exchange(engine, bytes(request("GET", "/rou%zz", null)),
				RawHttp.Mode.WHOLE);

		assertThat(health.body()).isEqualTo("engine up");
		// Reactor Netty's own 404 (empty), not the standalone server's "Not Found: ..." text.
		assertThat(other.status()).isEqualTo(404);
		assertThat(other.body()).isEmpty();
		assertThat(undecodable.status()).isEqualTo(404);
		assertThat(undecodable.body()).isEmpty();
	}

	@Test
	void oneStartServesEveryServerItIsMountedOnFromTheSameTables() {
		DisposableBootstrapRoutes routes = BootstrapRoutes.create().start();
		mounted.add(routes);
		DisposableServer first = bind(HttpServer.create().host("127.0.0.1").port(0).route(routes));
		DisposableServer second = bind(HttpServer.create().host("127.0.0.1").port(0)
				.route(routes.andThen(r -> r.get("/health", (req, res) -> res.sendString(Mono.just("up"))))));

		assertThat(RawHttp.exchange(first.port(), bytes(request("PUT", "/route", registration(0))),
				RawHttp.Mode.WHOLE).status()).isEqualTo(200);

		assertThat(routes.registeredCount()).isEqualTo(1);
		assertThat(RawHttp.exchange(second.port(), bytes(request("GET", lookup(0, 0, 0, 0), null)),
				RawHttp.Mode.WHOLE).body()).isEqualTo("Prefill server not fully registered yet (1 workers "
						+ "registered).");
		assertThat(RawHttp.exchange(second.port(), bytes(request("GET", "/health", null)), RawHttp.Mode.WHOLE)
				.body()).isEqualTo("up");
	}

	@Test
	void disposingStopsTheGaugesAndRefusesToMountAgain() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		DisposableBootstrapRoutes routes = BootstrapRoutes.create().metrics(registry).start();
		assertThat(registry.get(ServerMetrics.REGISTERED_RANKS).gauge().value()).isZero();
		assertThat(routes.isDisposed()).isFalse();

		routes.dispose();
		routes.dispose();

		assertThat(routes.isDisposed()).isTrue();
		assertThat(registry.find(ServerMetrics.REGISTERED_RANKS).gauge()).isNull();
		assertThatThrownBy(() -> HttpServer.create().route(routes).bindNow(TIMEOUT))
				.isInstanceOf(IllegalStateException.class).hasMessageContaining("disposed");
	}

	@Test
	void countsTheMountedRoutesRequests() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		int engine = engine(BootstrapRoutes.create().metrics(registry));

		// A request is counted once its answer went out; the next one on the connection is read after that.
		RawHttp.exchange(engine, bytes(request("GET", lookup(-1, -1, -1, -1), null).replace("Connection: close\r\n",
				"") + request("GET", "/health", null)), RawHttp.Mode.WHOLE);

		assertThat(registry.get(ServerMetrics.REQUESTS).tags("route", "/route", "status", "503").counter().count())
				.isEqualTo(1.0);
		assertThat(registry.get(ServerMetrics.LOOKUPS).tags("outcome", "not_ready").counter().count())
				.isEqualTo(1.0);
	}

	@Test
	void theStandaloneServerTakesTheRoutesConfiguration() {
		BootstrapRoutes config = BootstrapRoutes.create().maxBodyBytes(10).maxDpRankEntries(3).authToken(TOKEN);
		BootstrapServer server = BootstrapServer.create().routes(config);

		assertThat(server.routes()).isSameAs(config);
		assertThat(server.maxBodyBytes()).isEqualTo(10);
		assertThat(server.maxDpRankEntries()).isEqualTo(3);
		assertThat(server.requiresAuthToken()).isTrue();
		assertThat(server.maxBodyBytes(20).routes().maxBodyBytes()).isEqualTo(20);
		assertThat(config.maxBodyBytes()).isEqualTo(10);
		assertThat(config.toString()).doesNotContain(TOKEN);
		assertThatThrownBy(() -> config.maxBodyBytes(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maxBodyBytes : 0 (expected: > 0)");
		assertThatThrownBy(() -> BootstrapRoutes.create().etcdCredentials("u", "p").start())
				.isInstanceOf(IllegalStateException.class).hasMessageContaining("without etcdRegistry");
	}

	/** The requests an SGLang prefill and decode send, in order, and the bad ones a client may send. */
	private static List<String> sequence(String token) {
		List<String> r = new ArrayList<>();
		// Before any registration: not ready, in both forms, and a rank that is not there.
		r.add(request("GET", lookup(-1, -1, -1, -1), null));
		r.add(request("GET", legacy(-1, -1, -1), null));
		r.add(request("GET", lookup(0, 0, 0, 0), null));
		r.add(request("GET", legacy(0, 0, 0), null));
		r.add(authorized(request("PUT", "/route", registration(0)), token));
		r.add(request("GET", lookup(-1, -1, -1, -1), null));
		r.add(authorized(request("PUT", "/route", registration(1)), token));
		r.add(authorized(request("PUT", "/route", registration(1)), token));
		// Ready: the sizes, each rank, a rank outside the instance.
		r.add(request("GET", lookup(-1, -1, -1, -1), null));
		r.add(request("GET", legacy(-1, -1, -1), null));
		r.add(request("GET", lookup(0, 0, 1, 0), null));
		r.add(request("GET", legacy(1, 0, 0), null));
		r.add(request("GET", lookup(0, 0, 5, 0), null));
		r.add(request("GET", legacy(0, 3, 0), null));
		r.add(request("GET", "/rout%65?prefill_dp_rank=0&prefill_cp_rank=0&target_tp_rank=0&target_pp_rank=0",
				null));
		r.add(request("GET", lookup(0, 0, 0, 0) + "&extra=1&target_tp_rank=1", null));
		// Bad look-ups.
		r.add(request("GET", "/route?prefill_dp_rank=0&prefill_cp_rank=0&target_pp_rank=0", null));
		r.add(request("GET", "/route?prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=0&target_pp_rank=-1",
				null));
		r.add(request("GET", "/route?engine_rank=-2&target_dp_group=0&target_pp_rank=0", null));
		r.add(request("GET", "/route?engine_rank=abc&target_dp_group=0&target_pp_rank=0", null));
		r.add(request("GET", "/route?engine_rank=&target_dp_group=0&target_pp_rank=0", null));
		r.add(request("GET", "/route?engine_rank=99999999999&target_dp_group=0&target_pp_rank=0", null));
		r.add(request("GET", "/route?engine_rank=%zz&target_dp_group=0&target_pp_rank=0", null));
		r.add(request("GET", "/route", null));
		// Wrong methods.
		r.add(request("POST", "/route", "{}"));
		r.add(request("DELETE", "/route", null));
		r.add(request("HEAD", "/route", null));
		r.add(request("GET", "/register_dp_rank", null));
		r.add(request("PUT", "/query_dp_ranks", "{}"));
		// Bad registrations.
		r.add(authorized(request("PUT", "/route", "{"), token));
		r.add(authorized(request("PUT", "/route", "[]"), token));
		r.add(authorized(request("PUT", "/route", "{\"rank_ip\": \"10.0.0.1\"}"), token));
		r.add(authorized(request("PUT", "/route", registration(0).replace("\"rank_port\": 6000",
				"\"rank_port\": \"x\"")), token));
		r.add(authorized(request("PUT", "/route", "{\"padding\": \"" + "x".repeat(MAX_BODY) + "\"}"), token));
		r.add(authorized(chunked(registration(0)), token));
		// The room to DP rank table.
		r.add(authorized(request("POST", "/register_dp_rank", "{\"bootstrap_room\": 7, \"dp_rank\": 1}"), token));
		r.add(authorized(request("POST", "/register_dp_rank", "{\"bootstrap_room\": 8, \"dp_rank\": -1}"), token));
		r.add(authorized(request("POST", "/register_dp_rank", "{\"dp_rank\": 0}"), token));
		r.add(request("POST", "/query_dp_ranks", "{\"bootstrap_rooms\": [7, 8, 9]}"));
		r.add(request("POST", "/query_dp_ranks", "{\"bootstrap_rooms\": 7}"));
		r.add(request("POST", "/query_dp_ranks", "{\"bootstrap_rooms\": [-1]}"));
		r.add(request("POST", "/query_dp_ranks", "{}"));
		return r;
	}

	private int standalone(BootstrapRoutes config) {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0).routes(config)
				.bindNow();
		standalones.add(server);
		return server.address().port();
	}

	private int engine(BootstrapRoutes config) {
		DisposableBootstrapRoutes routes = config.start();
		mounted.add(routes);
		return bind(HttpServer.create().host("127.0.0.1").port(0)
				.route(r -> {
					r.get("/health", (req, res) -> res.sendString(Mono.just("engine up")));
					routes.accept(r);
					r.post("/generate", (req, res) -> res.sendString(Mono.just("generated")));
				})).port();
	}

	private DisposableServer bind(HttpServer server) {
		DisposableServer bound = server.bindNow(TIMEOUT);
		engines.add(bound);
		return bound;
	}

	private static String request(String method, String target, String json) {
		StringBuilder head = new StringBuilder(method).append(' ').append(target).append(" HTTP/1.1\r\n")
				.append("Host: 127.0.0.1\r\nUser-Agent: python-requests/2.32.3\r\nAccept: */*\r\n")
				.append("Connection: close\r\n");
		if (json == null) {
			return head.append("\r\n").toString();
		}
		return head.append("Content-Type: application/json\r\nContent-Length: ")
				.append(json.getBytes(StandardCharsets.UTF_8).length).append("\r\n\r\n").append(json).toString();
	}

	private static String chunked(String json) {
		int half = json.length() / 2;
		return "PUT /route HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
				+ Integer.toHexString(half) + "\r\n" + json.substring(0, half) + "\r\n"
				+ Integer.toHexString(json.length() - half) + "\r\n" + json.substring(half) + "\r\n0\r\n\r\n";
	}

	private static String authorized(String request, String token) {
		return token == null ? request : request.replace("Connection: close\r\n",
				"Connection: close\r\nAuthorization: Bearer " + token + "\r\n");
	}

	private static String registration(int tpRank) {
		return "{\"attn_tp_size\": 2, \"attn_tp_rank\": " + tpRank + ", \"attn_cp_size\": 1, \"attn_cp_rank\": 0, "
				+ "\"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, \"pp_rank\": 0, \"system_dp_size\": 1, "
				+ "\"system_dp_rank\": 0, \"rank_ip\": \"10.0.0." + tpRank + "\", \"rank_port\": " + (6000 + tpRank)
				+ ", \"page_size\": 64, \"kv_cache_dtype\": \"auto\", \"prefill_http_port\": 30000}";
	}

	private static String lookup(int dp, int cp, int tp, int pp) {
		return "/route?prefill_dp_rank=" + dp + "&prefill_cp_rank=" + cp + "&target_tp_rank=" + tp
				+ "&target_pp_rank=" + pp;
	}

	private static String legacy(int engineRank, int dpGroup, int pp) {
		return "/route?engine_rank=" + engineRank + "&target_dp_group=" + dpGroup + "&target_pp_rank=" + pp;
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

	private static String text(byte[] bytes) {
		return new String(bytes, StandardCharsets.ISO_8859_1);
	}

	private static String head(String request) {
		return request.substring(0, request.indexOf("\r\n"));
	}
}
