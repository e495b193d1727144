package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

import io.netty.handler.codec.http.HttpHeaderNames;
import org.jspecify.annotations.Nullable;
import reactor.netty.http.server.HttpServerRequest;

/** The bearer token mutating requests must carry, when one is configured. Immutable. */
final class BearerToken {

	private static final String BEARER = "Bearer ";

	private final byte @Nullable [] token;

	/** @param token the token, or null when requests need none */
	BearerToken(@Nullable String token) {
		this.token = token == null ? null : token.getBytes(StandardCharsets.UTF_8);
	}

	/**
	 * Checks a mutating request's token, before its body is read. Constant-time comparison.
	 *
	 * @throws RequestException 401 naming what is wrong with the header
	 */
	void check(HttpServerRequest request) {
		if (token == null) {
			return;
		}
		String header = request.requestHeaders().get(HttpHeaderNames.AUTHORIZATION);
		if (header == null) {
			throw RequestException.unauthorized("Authorization : missing (expected: Bearer <token>)");
		}
		if (!header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
			throw RequestException.unauthorized("Authorization : not a bearer token (expected: Bearer <token>)");
		}
		byte[] given = header.substring(BEARER.length()).trim().getBytes(StandardCharsets.UTF_8);
		if (!MessageDigest.isEqual(given, token)) {
			throw RequestException.unauthorized("Authorization : wrong bearer token");
		}
	}
}
