package io.kvferry.registry.etcd;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Collectors;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.kvferry.HostPort;
import io.kvferry.spi.LazyResource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.util.retry.Retry;

/**
 * One {@link EtcdBootstrapClient}'s connection to etcd: the jetcd {@link Client}, the caller's or built on the first
 * call, and the way every call runs on it ({@link #bounded}): bounded by the timeout, tried again while etcd answers
 * what passes by itself, failures typed. Thread-safe; {@link #dispose()} fails later calls and closes the client
 * unless it is the caller's.
 */
final class EtcdConnection {

	/** First and longest pause before a call that failed transiently is tried again. */
	private static final Duration RETRY_FIRST_DELAY = Duration.ofMillis(50);
	private static final Duration RETRY_MAX_DELAY = Duration.ofSeconds(1);

	/** Longest wait for one try of a call before it is tried again, within the call's timeout. */
	private static final Duration MAX_ATTEMPT_TIMEOUT = Duration.ofSeconds(2);

	private static final Logger LOG = LoggerFactory.getLogger(EtcdConnection.class);

	/** An etcd user and its password; the password never appears in a message. */
	record Credentials(String user, byte[] password) {
	}

	private final List<HostPort> endpoints;
	private final Duration timeout;
	/** Null for plain {@code http://}. */
	private final @Nullable EtcdTls tls;
	/** Null for no authentication. */
	private final @Nullable Credentials credentials;
	private final String prefix;
	/** The caller's client, which the caller closes; null: this builds and closes one of its own. */
	private final @Nullable Client given;
	/** The jetcd {@link Client}, built on the first call (at once the caller's). */
	private final LazyResource<Client> state;

	EtcdConnection(List<HostPort> endpoints, Duration timeout, @Nullable EtcdTls tls, @Nullable Credentials credentials,
			String prefix, @Nullable Client given) {
		this.given = given;
		this.state = new LazyResource<>(given, () -> new IllegalStateException("etcd registry client disposed"));
		this.endpoints = endpoints;
		this.timeout = timeout;
		this.tls = tls;
		this.credentials = credentials;
		this.prefix = prefix;
	}

	Duration timeout() {
		return timeout;
	}

	/**
	 * Runs one call on the connection, bounded by the timeout, with failures typed. Building the client on the first
	 * call is local work (no network) and is not counted against the timeout.
	 */
	<T> Mono<T> bounded(String call, Function<Client, Mono<T>> body) {
		return connection().flatMap(client -> Mono.defer(() -> {
			// What etcd answers while it elects a leader or a member is down passes: such calls are tried again
			// (every call here is idempotent) until the timeout, which then reports the last such failure.
			AtomicReference<Throwable> transientFailure = new AtomicReference<>();
			return body.apply(client)
					// A member that died with the call in flight answers nothing (or, as a follower that lost its
					// leader, only after etcd's own request timeout, 7 s by default): ask again instead.
					.timeout(attemptTimeout(), Schedulers.parallel())
					.retryWhen(Retry.backoff(Long.MAX_VALUE, RETRY_FIRST_DELAY).maxBackoff(RETRY_MAX_DELAY)
							.filter(e -> EtcdErrors.isTransient(e) && !isDisposed())
							.doBeforeRetry(s -> {
								transientFailure.set(s.failure());
								LOG.debug("{}: retrying after {}", call, EtcdErrors.describe(s.failure()));
							}))
					.timeout(timeout, Schedulers.parallel())
					.onErrorMap(TimeoutException.class, e -> transientFailure.get() == null ? e
							: EtcdErrors.gaveUp(transientFailure.get(), timeout, access()));
		})).onErrorMap(e -> EtcdErrors.map(call, access(), timeout, e));
	}

	private Duration attemptTimeout() {
		return timeout.compareTo(MAX_ATTEMPT_TIMEOUT) < 0 ? timeout : MAX_ATTEMPT_TIMEOUT;
	}

	/** The etcd client, created on first use off the caller's thread (building it starts Vert.x). */
	Mono<Client> connection() {
		return Mono.defer(() -> {
			if (state.isDisposed()) {
				return Mono.error(new IllegalStateException("etcd registry client disposed"));
			}
			Client client = state.peek();
			if (client != null) {
				return Mono.just(client);
			}
			return Mono.fromCallable(() -> state.get(this::build, Client::close))
					.subscribeOn(Schedulers.boundedElastic());
		});
	}

	private Client build() {
		ClientBuilder builder = Client.builder()
				.endpoints(endpoints.stream().map(e -> URI.create((tls == null ? "http://" : "https://") + e))
						.toList())
				.connectTimeout(timeout)
				// Calls fail at once, with the reason, when no member can be connected to (refused, TLS
				// handshake failed), instead of waiting for one until the attempt times out with no reason;
				// bounded() tries again what passes by itself. jetcd retries nothing itself: its retries would
				// hide a TLS failure behind the attempt timeout as well.
				.waitForReady(false)
				.retryMaxAttempts(0)
				.retryMaxDuration(timeout);
		if (tls != null) {
			builder.sslContext(tls.context());
		}
		if (credentials != null) {
			builder.user(ByteSequence.from(credentials.user(), StandardCharsets.UTF_8))
					.password(ByteSequence.from(credentials.password()));
		}
		Client created = builder.build();
		LOG.debug("Built etcd registry client for {}", where());
		return created;
	}

	/** How etcd is reached, for failure messages. */
	EtcdErrors.Access access() {
		return new EtcdErrors.Access(where(), tls, credentials == null ? null : credentials.user(), prefix);
	}

	/** @return the endpoints with their scheme, as failure messages name them: {@code [https://10.0.0.1:2379]} */
	String where() {
		String scheme = tls == null ? "http://" : "https://";
		return endpoints.stream().map(e -> scheme + e).collect(Collectors.joining(", ", "[", "]"));
	}

	/**
	 * Fails later calls, runs {@code beforeClose} (with {@link #isDisposed()} already true), then closes the etcd client,
	 * without waiting. Idempotent, any thread.
	 */
	void dispose(Runnable beforeClose) {
		boolean first = state.dispose();
		beforeClose.run();
		Client client = state.peek();
		if (first && client != null && client != given) {
			client.close();
		}
	}

	boolean isDisposed() {
		return state.isDisposed();
	}
}
