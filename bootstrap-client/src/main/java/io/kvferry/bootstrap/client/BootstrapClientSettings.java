package io.kvferry.bootstrap.client;

import java.time.Duration;
import java.util.function.DoubleSupplier;

import io.netty.handler.ssl.SslContext;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;

/**
 * What one {@link ReactorBootstrapClient} configuration holds; mutated only on a fresh copy, inside
 * {@code ReactorBootstrapClient.with}, before it is shared.
 */
final class BootstrapClientSettings {

	Duration timeout = ReactorBootstrapClient.DEFAULT_TIMEOUT;
	int registerAttempts = ReactorBootstrapClient.DEFAULT_REGISTER_ATTEMPTS;
	Duration backoffBase = ReactorBootstrapClient.DEFAULT_BACKOFF_BASE;
	Duration backoffCap = ReactorBootstrapClient.DEFAULT_BACKOFF_CAP;
	DoubleSupplier jitter = RegisterRetry::sglangJitter;
	/** Null: {@link Schedulers#parallel()}, looked up per call so virtual-time tests can replace it. */
	@Nullable Scheduler scheduler;
	/** Null: no Authorization header. */
	@Nullable String bearerToken;
	int maxResponseBytes = ReactorBootstrapClient.DEFAULT_MAX_RESPONSE_BYTES;
	/** Null: plain HTTP. */
	@Nullable SslContext sslContext;
	/** The caller's client (its pool and loops stay the caller's); null: a pool of the client's own. */
	@Nullable HttpClient httpClient;

	BootstrapClientSettings copy() {
		BootstrapClientSettings copy = new BootstrapClientSettings();
		copy.timeout = timeout;
		copy.registerAttempts = registerAttempts;
		copy.backoffBase = backoffBase;
		copy.backoffCap = backoffCap;
		copy.jitter = jitter;
		copy.scheduler = scheduler;
		copy.bearerToken = bearerToken;
		copy.maxResponseBytes = maxResponseBytes;
		copy.sslContext = sslContext;
		copy.httpClient = httpClient;
		return copy;
	}
}
