package io.kvferry.bootstrap.server;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublisher;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import javax.net.ssl.SSLContext;

import io.kvferry.HostPort;

/** A foreign client for the tests: the JDK's {@link HttpClient}, HTTP/1.1, with bounded timeouts. */
final class TestHttp {

	static final Duration TIMEOUT = Duration.ofSeconds(20);

	private final HttpClient client;
	private final String baseUrl;

	TestHttp(HostPort server) {
		this(server.httpUrl(), null);
	}

	/**
	 * @param baseUrl {@code http(s)://host:port}
	 * @param tls the trust (and key) material for HTTPS, or null for the JDK's defaults
	 */
	TestHttp(String baseUrl, SSLContext tls) {
		HttpClient.Builder builder = HttpClient.newBuilder()
				.version(HttpClient.Version.HTTP_1_1)
				.connectTimeout(TIMEOUT);
		if (tls != null) {
			builder.sslContext(tls);
		}
		this.client = builder.build();
		this.baseUrl = baseUrl;
	}

	HttpResponse<String> get(String pathAndQuery) {
		return send("GET", pathAndQuery, BodyPublishers.noBody());
	}

	HttpResponse<String> put(String path, String json) {
		return send("PUT", path, BodyPublishers.ofString(json));
	}

	HttpResponse<String> post(String path, String json) {
		return send("POST", path, BodyPublishers.ofString(json));
	}

	/** Sends a body of unknown length, so with {@code Transfer-Encoding: chunked}. */
	HttpResponse<String> putChunked(String path, byte[] body) {
		return send("PUT", path, BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body)));
	}

	CompletableFuture<HttpResponse<String>> putAsync(String path, String json) {
		return sendAsync("PUT", path, json);
	}

	CompletableFuture<HttpResponse<String>> postAsync(String path, String json) {
		return sendAsync("POST", path, json);
	}

	private CompletableFuture<HttpResponse<String>> sendAsync(String method, String path, String json) {
		return client.sendAsync(request(method, path, BodyPublishers.ofString(json)),
				BodyHandlers.ofString(StandardCharsets.UTF_8));
	}

	HttpResponse<String> send(String method, String pathAndQuery, BodyPublisher body, String... headers) {
		try {
			return client.send(request(method, pathAndQuery, body, headers),
					BodyHandlers.ofString(StandardCharsets.UTF_8));
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(e);
		}
	}

	private HttpRequest request(String method, String pathAndQuery, BodyPublisher body, String... headers) {
		HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(baseUrl + pathAndQuery))
				.timeout(TIMEOUT)
				.method(method, body);
		if (headers.length > 0) {
			builder.headers(headers);
		}
		return builder.build();
	}

	/** A seed-style {@code PUT /route} body with page size 16. */
	static String registration(int attnTpSize, int attnTpRank, int attnDpSize, int attnDpRank, int ppSize,
			int ppRank, String rankIp, int rankPort) {
		return registration(attnTpSize, attnTpRank, attnDpSize, attnDpRank, ppSize, ppRank, rankIp, rankPort, 16);
	}

	/**
	 * A seed-style {@code PUT /route} body.
	 *
	 * @param attnDpSize attention DP size (system_dp_size is 1: DP attention)
	 */
	static String registration(int attnTpSize, int attnTpRank, int attnDpSize, int attnDpRank, int ppSize,
			int ppRank, String rankIp, int rankPort, int pageSize) {
		return "{\"role\": \"Prefill\", \"attn_tp_size\": " + attnTpSize + ", \"attn_tp_rank\": " + attnTpRank
				+ ", \"attn_dp_size\": " + attnDpSize + ", \"attn_dp_rank\": " + attnDpRank + ", \"pp_size\": "
				+ ppSize + ", \"pp_rank\": " + ppRank + ", \"system_dp_size\": 1, \"system_dp_rank\": 0"
				+ ", \"rank_ip\": \"" + rankIp + "\", \"rank_port\": " + rankPort + ", \"page_size\": " + pageSize
				+ "}";
	}
}
