package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;

import io.netty.handler.codec.http.HttpHeaderNames;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerResponse;

/**
 * How the bootstrap routes answer: a status, a content type and a whole body with its length, written in one go. Every
 * answer of the routes goes through here, so none leaves without a {@code Content-Length}.
 */
final class HttpAnswers {

	static final String TEXT = "text/plain; charset=utf-8";
	static final String JSON = "application/json; charset=utf-8";
	static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

	private HttpAnswers() {
	}

	static Mono<Void> text(HttpServerResponse response, int status, String text) {
		return send(response, status, TEXT, text.getBytes(StandardCharsets.UTF_8));
	}

	/** @return a 200 whose body is {@code value} written as JSON */
	static Mono<Void> json(HttpServerResponse response, Object value) {
		return send(response, 200, JSON, Json.write(value));
	}

	static Mono<Void> send(HttpServerResponse response, int status, String contentType, byte[] body) {
		return response.status(status)
				.header(HttpHeaderNames.CONTENT_TYPE, contentType)
				.header(HttpHeaderNames.CONTENT_LENGTH, Integer.toString(body.length))
				.sendByteArray(Mono.just(body))
				.then();
	}
}
