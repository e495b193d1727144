package io.kvferry.bootstrap.server.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.function.Predicate;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.QueryStringDecoder;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.channel.AbortedException;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;

/**
 * The bootstrap server's HTTP routes, SGLang-compatible. Mounted routes ({@code BootstrapRoutes}) give it the requests
 * of the bootstrap paths ({@link #isBootstrapPath}); the standalone server mounts those routes and gives it every
 * other request too, for its {@code /health}, {@code /metrics} and 404:
 * <ul>
 * <li>{@code PUT /route}: a prefill rank registers ({@link Registration}); 200 {@code OK}.</li>
 * <li>{@code GET /route?engine_rank=&target_dp_group=&target_pp_rank=} (SGLang's older protocol) and
 * {@code GET /route?prefill_dp_rank=&prefill_cp_rank=&target_tp_rank=&target_pp_rank=} (today's): all −1 asks for the
 * instance's sizes (503 until every rank registered), otherwise for one rank's endpoint (404 when unknown). Both are
 * {@code RankRouteRequests}'.</li>
 * <li>{@code POST /register_dp_rank} and {@code POST /query_dp_ranks}: the room → DP rank table
 * ({@code DpRankRequests}).</li>
 * <li>{@code POST /register_encoder_url}, {@code DELETE /unregister_encoder_url} and {@code GET /list_encoder_urls}:
 * the encoder role of SGLang's encoder bootstrap server ({@link EncoderUrls}).</li>
 * <li>{@code GET /health}: 200 {@code OK}.</li>
 * <li>{@code GET /metrics}: the Prometheus scrape, when the server records into a Prometheus registry (else 404).</li>
 * </ul>
 * Bad input is answered 400 with a plain-text message naming the field or parameter (a malformed percent-encoding in
 * the request target included), oversized bodies 413, other methods 405 with an {@code Allow} header, unknown paths
 * 404; never 500. With a token configured, mutating requests without the right {@code Authorization: Bearer} header
 * are answered 401; reads stay open, as SGLang proposes. A request whose client goes away before its answer is dropped
 * quietly (DEBUG), as is one cut by {@link RequestReadTimeout}. Every request is counted in {@link ServerMetrics}.
 * <p>
 * Runs on the event loop and never blocks: bodies are bounded and parsed in memory, tables are lock-free; only the
 * metrics scrape, which may take the registry's locks, runs on {@link Schedulers#boundedElastic()}. Inbound buffers are
 * copied and released by Reactor Netty as soon as they are read; no buffer outlives a call.
 * <p>
 * This class routes by path and method, reads bodies, checks the token and turns failures into answers; the routes'
 * own work is in the request classes above, and every answer is written by {@code HttpAnswers}.
 */
public final class BootstrapHttpHandler
		implements BiFunction<HttpServerRequest, HttpServerResponse, Publisher<Void>> {

	private static final Logger log = LoggerFactory.getLogger(BootstrapHttpHandler.class);

	private static final int MAX_SHOWN_PATH = 100;

	/** The paths of SGLang's bootstrap protocol, which the routes serve wherever they are mounted. */
	private static final String[] BOOTSTRAP_PATHS = { "/route", "/register_dp_rank", "/query_dp_ranks",
			"/register_encoder_url", "/unregister_encoder_url", "/list_encoder_urls" };

	private final RankRouteRequests ranks;
	private final DpRankRequests dpRanks;
	private final int maxBodyBytes;
	private final BearerToken bearer;
	private final ServerMetrics metrics;
	private final EncoderUrls encoders;

	/**
	 * @param routes the rank table (in memory, or shared in etcd)
	 * @param rooms the room → DP rank table
	 * @param maxBodyBytes largest accepted request body; larger ones get 413
	 * @param authToken when not {@code null}, the bearer token mutating requests ({@code PUT /route},
	 *        {@code POST /register_dp_rank}) must carry, else 401
	 * @param metrics where requests are counted, and what {@code GET /metrics} scrapes
	 * @param encoders the encoder URLs registered here
	 */
	public BootstrapHttpHandler(RouteStore routes, RoomDpRankTable rooms, int maxBodyBytes, String authToken,
			ServerMetrics metrics, EncoderUrls encoders) {
		Objects.requireNonNull(routes, "routes");
		Objects.requireNonNull(rooms, "rooms");
		if (maxBodyBytes < 1) {
			throw new IllegalArgumentException("maxBodyBytes : " + maxBodyBytes + " (expected: > 0)");
		}
		this.maxBodyBytes = maxBodyBytes;
		this.bearer = new BearerToken(authToken);
		this.metrics = Objects.requireNonNull(metrics, "metrics");
		this.ranks = new RankRouteRequests(routes, metrics);
		this.dpRanks = new DpRankRequests(rooms, metrics);
		this.encoders = Objects.requireNonNull(encoders, "encoders");
		// Before any event loop serves a request: the JSON readers and writers are built now, on this thread.
		Json.warmUp();
	}

	/**
	 * Whether a request is for one of the bootstrap paths ({@code /route}, {@code /register_dp_rank},
	 * {@code /query_dp_ranks}), its path percent-decoded as {@link #apply} decodes it. A path that cannot be decoded
	 * is not theirs.
	 *
	 * @param request a request
	 * @return whether the bootstrap routes answer it
	 */
	public static boolean isBootstrapPath(HttpServerRequest request) {
		String target = request.uri();
		int end = target.length();
		boolean encoded = false;
		for (int i = 0; i < end; i++) {
			char c = target.charAt(i);
			if (c == '?' || c == '#') {
				end = i;
			}
			else if (c == '%') {
				encoded = true;
			}
		}
		if (!encoded) {
			return isBootstrapPath(target, end);
		}
		try {
			String path = new QueryStringDecoder(target).path();
			return isBootstrapPath(path, path.length());
		}
		catch (IllegalArgumentException e) {
			return false;
		}
	}

	private static boolean isBootstrapPath(String text, int length) {
		for (String path : BOOTSTRAP_PATHS) {
			if (length == path.length() && text.startsWith(path)) {
				return true;
			}
		}
		return false;
	}

	@Override
	public Publisher<Void> apply(HttpServerRequest request, HttpServerResponse response) {
		String path = ServerMetrics.OTHER;
		Mono<Void> answer;
		try {
			QueryStringDecoder uri = decode(request.uri());
			path = uri.path();
			answer = dispatch(request, response, uri);
		}
		catch (RequestException e) {
			answer = sendError(request, response, e);
		}
		catch (RuntimeException e) {
			// A bug rather than bad input: answered 500 and logged, never left to close the connection unanswered.
			answer = sendInternalError(request, response, e);
		}
		String route = path;
		return answer.onErrorResume(RequestException.class, e -> sendError(request, response, e))
				.onErrorResume(BootstrapHttpHandler::isClientGone, e -> clientGone(request, e))
				.onErrorResume(e -> !(e instanceof RequestException), e -> sendInternalError(request, response, e))
				.doFinally(signal -> metrics.request(route, request.method(),
						response.hasSentHeaders() ? response.status().code() : -1));
	}

	/**
	 * Decodes the request target, path and query parameters both, so that a malformed percent-encoding is refused here
	 * rather than thrown later by a lazy accessor.
	 */
	private static QueryStringDecoder decode(String requestTarget) {
		try {
			QueryStringDecoder uri = new QueryStringDecoder(requestTarget);
			uri.path();
			uri.parameters();
			return uri;
		}
		catch (IllegalArgumentException e) {
			String reason = String.valueOf(e.getMessage());
			throw RequestException.badRequest("request target : malformed percent-encoding, " + (reason.length()
					<= MAX_SHOWN_PATH ? reason : reason.substring(0, MAX_SHOWN_PATH) + "...")
					+ " (expected: '%' followed by two hex digits)");
		}
	}

	private Mono<Void> dispatch(HttpServerRequest request, HttpServerResponse response, QueryStringDecoder uri) {
		HttpMethod method = request.method();
		switch (uri.path()) {
			case "/route":
				if (HttpMethod.PUT.equals(method)) {
					bearer.check(request);
					return readBody(request).flatMap(body -> ranks.register(response, body));
				}
				if (HttpMethod.GET.equals(method)) {
					return ranks.get(response, uri.parameters());
				}
				return methodNotAllowed(request, response, "GET, PUT");
			case "/health":
				if (HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method)) {
					return HttpAnswers.text(response, 200, "OK");
				}
				return methodNotAllowed(request, response, "GET, HEAD");
			case "/register_dp_rank":
				if (HttpMethod.POST.equals(method)) {
					bearer.check(request);
					return readBody(request).flatMap(body -> dpRanks.register(response, body));
				}
				return methodNotAllowed(request, response, "POST");
			case "/query_dp_ranks":
				if (HttpMethod.POST.equals(method)) {
					return readBody(request).flatMap(body -> dpRanks.query(response, body));
				}
				return methodNotAllowed(request, response, "POST");
			case "/register_encoder_url":
				if (HttpMethod.POST.equals(method)) {
					bearer.check(request);
					return readBody(request).flatMap(body -> encoderUrl(response, body, encoders::register));
				}
				return methodNotAllowed(request, response, "POST");
			case "/unregister_encoder_url":
				if (HttpMethod.DELETE.equals(method)) {
					bearer.check(request);
					return readBody(request).flatMap(body -> encoderUrl(response, body, encoders::unregister));
				}
				return methodNotAllowed(request, response, "DELETE");
			case "/list_encoder_urls":
				if (HttpMethod.GET.equals(method)) {
					return HttpAnswers.send(response, 200, HttpAnswers.JSON, encoders.listAnswer());
				}
				return methodNotAllowed(request, response, "GET");
			case "/metrics":
				if (metrics.canScrape()) {
					if (HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method)) {
						return scrape(response);
					}
					return methodNotAllowed(request, response, "GET, HEAD");
				}
				throw notFound(uri.path());
			default:
				throw notFound(uri.path());
		}
	}

	/** SGLang's encoder bootstrap answers a missing URL with a JSON error, which its encoders log as they get it. */
	private static Mono<Void> encoderUrl(HttpServerResponse response, byte[] body, Predicate<String> change) {
		String url = EncoderUrls.url(Json.readObject(body));
		if (url == null) {
			return HttpAnswers.send(response, 400, HttpAnswers.JSON, EncoderUrls.MISSING_URL);
		}
		change.test(url);
		return HttpAnswers.text(response, 200, "OK");
	}

	private static RequestException notFound(String path) {
		return RequestException.notFound("Not Found: " + (path.length() <= MAX_SHOWN_PATH ? path
				: path.substring(0, MAX_SHOWN_PATH) + "..."));
	}

	private Mono<Void> scrape(HttpServerResponse response) {
		// The registry may take locks while it collects: kept off the event loop.
		return Mono.fromCallable(metrics::scrape)
				.subscribeOn(Schedulers.boundedElastic())
				.flatMap(text -> HttpAnswers.send(response, 200, HttpAnswers.PROMETHEUS_TEXT,
						text.getBytes(StandardCharsets.UTF_8)));
	}

	/**
	 * Reads the whole body, refusing more than {@code maxBodyBytes}: by the declared length before reading anything,
	 * else while reading. Each inbound buffer is copied; Reactor Netty releases it when the copy returns.
	 */
	private Mono<byte[]> readBody(HttpServerRequest request) {
		String declared = request.requestHeaders().get(HttpHeaderNames.CONTENT_LENGTH);
		if (declared != null) {
			// Netty's decoder already rejected a malformed Content-Length.
			try {
				if (Long.parseLong(declared.trim()) > maxBodyBytes) {
					return Mono.error(RequestException.tooLarge(maxBodyBytes));
				}
			}
			catch (NumberFormatException e) {
				return Mono.error(RequestException.badRequest("Content-Length : '" + declared
						+ "' (expected: a number)"));
			}
		}
		return request.receive().reduceWith(BodyBuffer::new, (buffer, chunk) -> buffer.append(chunk, maxBodyBytes))
				.map(BodyBuffer::toByteArray);
	}

	private static Mono<Void> methodNotAllowed(HttpServerRequest request, HttpServerResponse response, String allow) {
		log.debug("{} {}: 405, allowed {}", request.method(), request.uri(), allow);
		response.header(HttpHeaderNames.ALLOW, allow);
		return HttpAnswers.text(response, 405, "Method not allowed");
	}

	private static Mono<Void> sendError(HttpServerRequest request, HttpServerResponse response, RequestException e) {
		if (response.hasSentHeaders()) {
			return Mono.error(e);
		}
		log.debug("{} {}: {} {}", request.method(), request.uri(), e.status(), e.getMessage());
		if (e.status() == 413) {
			// The rest of the body is not read: close rather than parse it as the next request.
			response.keepAlive(false);
		}
		if (e.status() == 401) {
			response.header(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
		}
		return HttpAnswers.text(response, e.status(), e.getMessage());
	}

	/** The client closed or reset the connection: nobody is left to answer. */
	private static boolean isClientGone(Throwable e) {
		return e instanceof AbortedException || e instanceof IOException || AbortedException.isConnectionReset(e);
	}

	private static Mono<Void> clientGone(HttpServerRequest request, Throwable e) {
		log.debug("{} {}: connection closed before the answer ({})", request.method(), request.uri(), e.toString());
		return Mono.empty();
	}

	private static Mono<Void> sendInternalError(HttpServerRequest request, HttpServerResponse response, Throwable e) {
		log.error("{} {} failed", request.method(), request.uri(), e);
		if (response.hasSentHeaders()) {
			return Mono.error(e);
		}
		return HttpAnswers.text(response, 500, "Internal server error");
	}
}
