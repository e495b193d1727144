package io.kvferry.bootstrap.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.HostPort;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.netty.Connection;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerResponse;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A scripted HTTP server on a loopback address and an ephemeral port, standing in for a bootstrap server in error-path
 * tests. It records every request (copied, so nothing is held past the handler) and answers through a
 * {@link Responder} that sees the request's 1-based number.
 */
final class HttpStub implements AutoCloseable {

	/** Upper bound for waiting on a request the client is expected to send. */
	static final Duration WAIT = Duration.ofSeconds(10);

	/** A request as the stub saw it. */
	record Request(String method, String uri, HttpHeaders headers, String body) {
	}

	/** Answers request number {@code n} (1-based). */
	@FunctionalInterface
	interface Responder {
		Publisher<Void> answer(int n, Request request, HttpServerResponse response);
	}

	private final AtomicInteger count = new AtomicInteger();
	private final List<Request> requests = new CopyOnWriteArrayList<>();
	private final BlockingQueue<Request> arrivals = new LinkedBlockingQueue<>();
	private final DisposableServer server;
	private final String host;

	private HttpStub(String host, Responder responder) {
		this.host = host;
		this.server = HttpServer.create()
				.host(host)
				.port(0)
				.handle((req, res) -> req.receive().aggregate().asString(StandardCharsets.UTF_8).defaultIfEmpty("")
						.flatMap(body -> {
							Request request = new Request(req.method().name(), req.uri(),
									new DefaultHttpHeaders().add(req.requestHeaders()), body);
							int n = count.incrementAndGet();
							requests.add(request);
							arrivals.add(request);
							return Mono.from(responder.answer(n, request, res));
						}))
				.bindNow(WAIT);
	}

	/** @return a stub on 127.0.0.1 */
	static HttpStub start(Responder responder) {
		return new HttpStub("127.0.0.1", responder);
	}

	/** @return a stub on {@code host} (e.g. {@code ::1}) */
	static HttpStub start(String host, Responder responder) {
		return new HttpStub(host, responder);
	}

	/** @return a responder answering every request with {@code status} and a plain-text body */
	static Responder status(int status, String text) {
		return (n, request, response) -> response.status(status)
				.header(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
				.sendString(Mono.just(text));
	}

	/** @return a responder answering every request with 200 and a JSON body */
	static Responder json(String json) {
		return (n, request, response) -> response.status(200)
				.header(HttpHeaderNames.CONTENT_TYPE, "application/json")
				.sendString(Mono.just(json));
	}

	/** @return a responder that never answers */
	static Responder silent() {
		return (n, request, response) -> Mono.never();
	}

	/** @return a responder that closes the connection without answering */
	static Responder hangUp() {
		return (n, request, response) -> {
			response.withConnection(Connection::dispose);
			return Mono.never();
		};
	}

	HostPort address() {
		return new HostPort(host, server.port());
	}

	/** @return how many requests arrived so far */
	int count() {
		return count.get();
	}

	/** @return the requests that arrived so far, in order */
	List<Request> requests() {
		return List.copyOf(requests);
	}

	/** @return the next request not yet taken, waiting at most {@link #WAIT} */
	Request nextRequest() {
		try {
			Request request = arrivals.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
			assertThat(request).as("a request within " + WAIT).isNotNull();
			return request;
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new AssertionError("interrupted", e);
		}
	}

	@Override
	public void close() {
		server.disposeNow(WAIT);
	}
}
