package io.kvferry.bootstrap.client;

import java.net.URI;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.spi.LazyResource;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.ByteBufFlux;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.client.HttpClientResponse;
import reactor.netty.resources.ConnectionProvider;
import reactor.util.context.Context;

/**
 * The HTTP side of one {@link ReactorBootstrapClient}: its connection pool, created on the first call and reused by
 * every later one from any thread (or the caller's client, which keeps its own pool), and the bounded exchange each
 * call is. No {@code ByteBuf} leaves this class: bodies are copied into byte arrays as they arrive and Reactor Netty
 * releases its buffers.
 */
final class BootstrapHttp {

	/** Connections kept per bootstrap server. */
	static final int MAX_CONNECTIONS = 16;

	/** Calls that may wait for a pooled connection per bootstrap server, beyond {@link #MAX_CONNECTIONS}. */
	static final int MAX_PENDING_ACQUIRES = 1024;

	/** Idle pooled connections are closed before a server's keep-alive timeout (aiohttp: 75 s) closes them. */
	static final Duration MAX_IDLE_TIME = Duration.ofSeconds(20);

	/** The context key of a call's flag that its connection opened. */
	private static final String OPENED = "kvferry.bootstrap.opened";

	private final Duration timeout;
	/** Null: no Authorization header. */
	private final @Nullable String bearerToken;
	private final int maxResponseBytes;
	/** Null: plain HTTP. */
	private final @Nullable SslContext sslContext;
	/** The caller's client, which keeps its pool and loops; null: this makes and owns a pool. */
	private final @Nullable HttpClient given;
	/** The {@link Pool}, made on the first call. */
	private final LazyResource<Pool> transport = new LazyResource<>(null,
			() -> new IllegalStateException("bootstrap client disposed"));

	BootstrapHttp(Duration timeout, @Nullable String bearerToken, int maxResponseBytes,
			@Nullable SslContext sslContext, @Nullable HttpClient given) {
		this.given = given;
		this.timeout = timeout;
		this.bearerToken = bearerToken;
		this.maxResponseBytes = maxResponseBytes;
		this.sslContext = sslContext;
	}

	/**
	 * One HTTP exchange, bounded by the timeout: a 200 answer's body, or a {@link BootstrapException}.
	 *
	 * @param body the JSON request body (then the bearer token, if any, is sent), or null for none
	 */
	Mono<byte[]> exchange(HttpMethod method, String url, byte @Nullable [] body) {
		String call = call(method, url);
		// A URI object, not text: Reactor Netty misreads a text URL whose port has one digit as an unknown host.
		URI uri = URI.create(url);
		return Mono.defer(() -> {
			// Set once the call has its connection: a call that times out before could not connect.
			AtomicBoolean opened = new AtomicBoolean();
			return Mono.defer(() -> {
				HttpClient.RequestSender request = pool().http.request(method).uri(uri);
				HttpClient.ResponseReceiver<?> receiver = body == null ? request : request.send((req, out) -> {
					req.header(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
					if (bearerToken != null) {
						req.header(HttpHeaderNames.AUTHORIZATION, "Bearer " + bearerToken);
					}
					return out.sendByteArray(Mono.just(body));
				});
				return receiver.response((response, content) -> readAnswer(call, response, content)).next();
			})
					// Looked up per subscription, like the retry scheduler, so a virtual clock installed later applies.
					.timeout(timeout, Schedulers.parallel())
					.contextWrite(Context.of(OPENED, opened))
					.onErrorMap(error -> BootstrapErrors.fromFailure(call, uri.getAuthority(), opened.get(), timeout,
							error));
		});
	}

	private Mono<byte[]> readAnswer(String call, HttpClientResponse response, ByteBufFlux content) {
		int status = response.status().code();
		String reason = response.status().reasonPhrase();
		// asByteArray copies each chunk while Reactor Netty still holds it; Reactor Netty then releases the buffer.
		return content.asByteArray()
				.collect(() -> new Body(call, status, maxResponseBytes), Body::append)
				.handle((answer, sink) -> {
					byte[] bytes = answer.toByteArray();
					if (status == 200) {
						sink.next(bytes);
					}
					else {
						sink.error(BootstrapErrors.fromStatus(call, status, reason, bytes));
					}
				});
	}

	private Pool pool() {
		// A pool that lost the race never opened a connection.
		return transport.get(() -> new Pool(given, timeout, sslContext), Pool::dispose);
	}

	/** Closes the pool, if one was created, without waiting; later calls fail. Idempotent, any thread. */
	void dispose() {
		Pool pool = transport.dispose() ? transport.peek() : null;
		if (pool != null) {
			pool.dispose();
		}
	}

	boolean isDisposed() {
		return transport.isDisposed();
	}

	/** @return the method and URL, as failure messages start */
	static String call(HttpMethod method, String url) {
		return method.name() + " " + url;
	}

	/** The HTTP client and the pool it owns (none when the caller gave the client); created on first use. */
	private static final class Pool {

		/** Null when the caller's client brought its own pool. */
		final @Nullable ConnectionProvider provider;
		final HttpClient http;

		Pool(@Nullable HttpClient given, Duration timeout, @Nullable SslContext sslContext) {
			HttpClient base;
			if (given != null) {
				this.provider = null;
				base = given;
			}
			else {
				ConnectionProvider own = ConnectionProvider.builder("kvferry-bootstrap")
						.maxConnections(MAX_CONNECTIONS)
						.pendingAcquireMaxCount(MAX_PENDING_ACQUIRES)
						.pendingAcquireTimeout(timeout)
						.maxIdleTime(MAX_IDLE_TIME)
						.build();
				this.provider = own;
				base = HttpClient.create(own).runOn(Loops.GROUP);
			}
			int connectMillis = (int) Math.max(1, Math.min(RegisterRetry.saturatedNanos(timeout) / 1_000_000, Integer.MAX_VALUE));
			// Configuring a Reactor Netty client makes a new one: the caller's stays as it was.
			HttpClient client = base.option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectMillis);
			// The handshake is part of the call, so the call's timeout bounds it too.
			client = client.doOnRequest((request, connection) -> request.currentContextView()
					.<AtomicBoolean>getOrEmpty(OPENED).ifPresent(opened -> opened.set(true)));
			this.http = sslContext == null ? client
					: client.secure(spec -> spec.sslContext(sslContext).handshakeTimeout(timeout));
		}

		/** Closes the pool when this made it; a caller's client is the caller's to close. */
		void dispose() {
			if (provider != null) {
				provider.dispose();
			}
		}
	}

	/**
	 * The event loop of this JVM's bootstrap clients, made on first use and never disposed (a daemon thread, as
	 * Reactor Netty's global loops are): Epoll where available, else NIO. Reactor Netty's own loops would take io_uring
	 * whenever Netty's io_uring transport is on the class path (an engine may add it for its KV transport), with no
	 * setting that keeps them on Epoll; a few HTTP calls gain nothing from it.
	 */
	private static final class Loops {
		static final EventLoopGroup GROUP = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory(
				"kvferry-http-bootstrap-client-" + (Epoll.isAvailable() ? "epoll" : "nio"), true),
				Epoll.isAvailable() ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
	}

	/** An answer body being read, refused once it grows past the limit. Used by one exchange at a time. */
	private static final class Body {

		private final String call;
		private final int status;
		private final int maxBytes;
		private byte[] bytes = new byte[256];
		private int length;

		Body(String call, int status, int maxBytes) {
			this.call = call;
			this.status = status;
			this.maxBytes = maxBytes;
		}

		void append(byte[] chunk) {
			if (chunk.length > maxBytes - length) {
				throw new BootstrapException(BootstrapException.Kind.OTHER, status,
						call + ": answer larger than " + maxBytes + " bytes");
			}
			if (length + chunk.length > bytes.length) {
				bytes = Arrays.copyOf(bytes, Math.min(maxBytes, Math.max(bytes.length * 2, length + chunk.length)));
			}
			System.arraycopy(chunk, 0, bytes, length, chunk.length);
			length += chunk.length;
		}

		byte[] toByteArray() {
			return Arrays.copyOf(bytes, length);
		}
	}
}
