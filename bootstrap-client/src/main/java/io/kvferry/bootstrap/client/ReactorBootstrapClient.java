package io.kvferry.bootstrap.client;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;
import javax.net.ssl.SSLException;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;
import reactor.util.retry.Retry;

/**
 * A {@link BootstrapClient} on Reactor Netty's {@link HttpClient}, speaking SGLang's bootstrap protocol.
 *
 * <pre>{@code
 * ReactorBootstrapClient client = ReactorBootstrapClient.create()
 *         .timeout(Duration.ofSeconds(5))
 *         .bearerToken(token);
 * client.register(HostPort.parse("10.0.0.7:8998"), PrefillRegistration.prefill(layout, "10.0.0.8", 17000, 16))
 *         .then(client.parallelInfo(HostPort.parse("10.0.0.7:8998")))
 *         .subscribe(info -> ...);
 * ...
 * client.dispose();
 * }</pre>
 *
 * <p><b>Configuration.</b> Immutable: every setter returns a new client and leaves this one as it was. Defaults are
 * SGLang's: plain HTTP, a 5 s timeout per HTTP call; registration tries 5 times, waiting
 * {@code min(base × 2^k, cap) × jitter} before try {@code k + 2} (base 1 s, cap 30 s, jitter uniform in [0.75, 1)).
 *
 * <p><b>TLS.</b> {@link #secure()} or {@link #secure(SslContext)} switch every call to {@code https://host:port}, for a
 * bootstrap server bound with {@code BootstrapServer.secure(..)}: the server's certificate must be trusted and name
 * the host (hostname verification is on). Pair it with {@link #bearerToken(String)}, which over plain HTTP crosses the
 * network in clear:
 * <pre>{@code
 * SslContext trust = SslContextBuilder.forClient().trustManager(new File("bootstrap-ca.pem")).build();
 * ReactorBootstrapClient client = ReactorBootstrapClient.create().secure(trust).bearerToken(token);
 * }</pre>
 * A TLS failure (untrusted certificate, wrong host name, a plain-HTTP server) fails the call with
 * {@link BootstrapException.Kind#OTHER} and is not retried: it will not pass by itself.
 *
 * <p><b>Calls.</b> Every method is lazy (nothing is sent before subscription; each subscription sends anew),
 * non-blocking, and bounded: each HTTP exchange fails with {@link BootstrapException.Kind#TIMEOUT} when it has not
 * finished within the timeout, and answers larger than {@link #maxResponseBytes(int)} are refused. Failures are
 * {@link BootstrapException}s whose message starts with the method and URL. Results are signalled on a Netty event
 * loop or on the timer thread: do not block in downstream operators.
 *
 * <p><b>Resources.</b> Each client creates its own connection pool on its first call and reuses it for every later
 * call, from any thread; {@link #dispose()} closes that pool (event loops are Reactor Netty's shared ones). A client
 * that never sent anything owns nothing. A client given the caller's {@link HttpClient} ({@link #httpClient}) uses its
 * pool and loops and never closes them. No {@code ByteBuf} crosses this API: bodies are copied into byte arrays as
 * they arrive and Reactor Netty releases its buffers.
 */
public final class ReactorBootstrapClient implements BootstrapClient, Disposable {

	/** SGLang's timeout for every bootstrap HTTP call. */
	public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

	/** SGLang's number of registration attempts. */
	public static final int DEFAULT_REGISTER_ATTEMPTS = 5;

	/** Delay before the first registration retry, before jitter. */
	public static final Duration DEFAULT_BACKOFF_BASE = Duration.ofSeconds(1);

	/** Longest delay between registration attempts, before jitter. */
	public static final Duration DEFAULT_BACKOFF_CAP = Duration.ofSeconds(30);

	/** Largest answer body accepted; bootstrap answers are a few hundred bytes. */
	public static final int DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

	private static final Logger LOG = LoggerFactory.getLogger(ReactorBootstrapClient.class);

	private static final String ROUTE = "/route";
	private static final String HEALTH = "/health";
	private static final String PARALLEL_INFO_QUERY = "?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1";

	private final BootstrapClientSettings settings;

	/** This client's own connection pool and calls. */
	private final BootstrapHttp http;

	private ReactorBootstrapClient(BootstrapClientSettings settings) {
		this.settings = settings;
		this.http = new BootstrapHttp(settings.timeout, settings.bearerToken, settings.maxResponseBytes,
				settings.sslContext, settings.httpClient);
	}

	/**
	 * @return a client with SGLang's defaults; it owns nothing until its first call
	 */
	public static ReactorBootstrapClient create() {
		return new ReactorBootstrapClient(new BootstrapClientSettings());
	}

	/**
	 * @param timeout the longest one HTTP call (connect, send, answer) may take; default 5 s
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient timeout(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		if (timeout.isNegative() || timeout.isZero()) {
			throw new IllegalArgumentException("timeout : " + timeout + " (expected: > 0)");
		}
		return with(s -> s.timeout = timeout);
	}

	/**
	 * @param attempts how many times {@link #register} tries before it fails; default 5, 1 means no retry
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient registerAttempts(int attempts) {
		if (attempts < 1) {
			throw new IllegalArgumentException("registerAttempts : " + attempts + " (expected: >= 1)");
		}
		return with(s -> s.registerAttempts = attempts);
	}

	/**
	 * Sets the registration backoff: the delay before try {@code k + 2} (k = 0, 1, ...) is
	 * {@code min(base × 2^k, cap) × jitter}.
	 *
	 * @param base the delay before the first retry, before jitter; default 1 s
	 * @param cap the longest delay, before jitter; default 30 s
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient backoff(Duration base, Duration cap) {
		Objects.requireNonNull(base, "base");
		Objects.requireNonNull(cap, "cap");
		if (base.isNegative() || base.isZero()) {
			throw new IllegalArgumentException("base : " + base + " (expected: > 0)");
		}
		if (cap.compareTo(base) < 0) {
			throw new IllegalArgumentException("cap : " + cap + " (expected: >= base " + base + ")");
		}
		return with(s -> {
			s.backoffBase = base;
			s.backoffCap = cap;
		});
	}

	/**
	 * @param jitter the factor each backoff delay is multiplied by, asked once per retry; it must return a finite value
	 * >= 0 (else the registration fails with an {@link IllegalArgumentException}). Default: uniform in [0.75, 1), as
	 * SGLang. Called on whichever thread saw the failure, so it must be thread-safe.
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient jitter(DoubleSupplier jitter) {
		Objects.requireNonNull(jitter, "jitter");
		return with(s -> s.jitter = jitter);
	}

	/**
	 * @param scheduler where registration retry delays are timed; default {@link Schedulers#parallel()} (looked up at
	 * each call). Tests pass a virtual-time scheduler. Per-call timeouts always run on {@link Schedulers#parallel()}.
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient scheduler(Scheduler scheduler) {
		Objects.requireNonNull(scheduler, "scheduler");
		return with(s -> s.scheduler = scheduler);
	}

	/**
	 * @param token sent as {@code Authorization: Bearer <token>} on {@code PUT /route} (the only mutating call); reads
	 * stay unauthenticated, as the server expects
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient bearerToken(String token) {
		Objects.requireNonNull(token, "token");
		if (token.isBlank() || token.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
			throw new IllegalArgumentException("token : <hidden> (expected: non-empty visible ASCII, no spaces)");
		}
		return with(s -> s.bearerToken = token);
	}

	/**
	 * @param maxBytes the largest answer body accepted; a larger one fails the call with
	 * {@link BootstrapException.Kind#OTHER}. Default {@link #DEFAULT_MAX_RESPONSE_BYTES}.
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient maxResponseBytes(int maxBytes) {
		if (maxBytes < 1) {
			throw new IllegalArgumentException("maxResponseBytes : " + maxBytes + " (expected: >= 1)");
		}
		return with(s -> s.maxResponseBytes = maxBytes);
	}

	/**
	 * Speaks HTTPS, trusting the JDK's default certificate authorities (the {@code cacerts} trust store, or
	 * {@code javax.net.ssl.trustStore}).
	 *
	 * @return a new {@link ReactorBootstrapClient}
	 * @throws IllegalStateException when the JDK's TLS setup cannot be loaded
	 */
	public ReactorBootstrapClient secure() {
		try {
			return secure(SslContextBuilder.forClient().build());
		}
		catch (SSLException e) {
			throw new IllegalStateException("cannot set up TLS with the JDK's default trust", e);
		}
	}

	/**
	 * Speaks HTTPS with the given client context: its trust manager decides which server certificates are accepted,
	 * its key manager (if any) gives the client certificate for mutual TLS. Host names are verified.
	 *
	 * @param sslContext a client context ({@code SslContextBuilder.forClient()...build()})
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient secure(SslContext sslContext) {
		Objects.requireNonNull(sslContext, "sslContext");
		if (!sslContext.isClient()) {
			throw new IllegalArgumentException("sslContext : a server context (expected: a client context from "
					+ "SslContextBuilder.forClient())");
		}
		return with(s -> s.sslContext = sslContext);
	}

	/**
	 * Sends every call through the caller's Reactor Netty client instead of a connection pool of this client's own,
	 * so that its pool and event loops can be shared, e.g. with a transport's:
	 * {@code HttpClient.create().runOn(loops.group())}. This client still applies its timeout (as the connect timeout
	 * and per call), its TLS ({@link #secure}) and its headers on a copy; the given client is left as it was.
	 * The caller owns it: {@link #dispose()} stops this client's calls but closes neither its pool nor its loops.
	 *
	 * @param client a Reactor Netty {@link HttpClient}
	 * @return a new {@link ReactorBootstrapClient}
	 */
	public ReactorBootstrapClient httpClient(HttpClient client) {
		Objects.requireNonNull(client, "client");
		return with(s -> s.httpClient = client);
	}

	/** @return whether calls go over HTTPS */
	public boolean isSecure() {
		return settings.sslContext != null;
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Sends {@code PUT /route} with SGLang's JSON fields; success is status 200. Only failures that may pass are
	 * retried ({@link BootstrapException#isRetryable()}: timeout, unreachable, 503, other 5xx); a 400 or 401 fails at
	 * once. Each retry is logged at WARN; the final failure is logged once at ERROR and signalled as a
	 * {@link BootstrapException} of the last failure's kind and status, whose message gives the number of attempts
	 * and the last error.
	 */
	@Override
	public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		Objects.requireNonNull(registration, "registration");
		String url = baseUrl(bootstrap) + ROUTE;
		return Mono.defer(() -> {
			byte[] body = BootstrapCodec.encodeRegistration(registration);
			RegisterRetry retry = new RegisterRetry(settings.registerAttempts, settings.backoffBase,
					settings.backoffCap, settings.jitter);
			AtomicInteger attempts = new AtomicInteger();
			Scheduler scheduler = settings.scheduler;
			Scheduler delays = scheduler != null ? scheduler : Schedulers.parallel();
			return http.exchange(HttpMethod.PUT, url, body)
					.doOnSubscribe(s -> attempts.incrementAndGet())
					.retryWhen(Retry.from(signals -> signals.concatMap(signal ->
							retryDelay(retry, url, signal.totalRetries(), signal.failure(), delays))))
					.onErrorMap(BootstrapException.class, last -> RegisterRetry.gaveUp(attempts.get(), last))
					.doOnError(BootstrapException.class, failure -> LOG.error("{}", failure.getMessage()))
					.then();
		});
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Sends {@code GET /route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1} and reads
	 * {@code prefill_attn_tp_size}, {@code prefill_dp_size}, {@code prefill_pp_size} and {@code prefill_page_size};
	 * other fields are ignored. A missing or null field fails with {@link BootstrapException.Kind#OTHER} naming it.
	 * Not retried.
	 */
	@Override
	public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		String url = baseUrl(bootstrap) + ROUTE + PARALLEL_INFO_QUERY;
		return http.exchange(HttpMethod.GET, url, null)
				.map(body -> BootstrapCodec.decodeParallelInfo(BootstrapHttp.call(HttpMethod.GET, url), body));
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Sends {@code GET /route?engine_rank=T&target_dp_group=G&target_pp_rank=P} and reads {@code rank_ip} and
	 * {@code rank_port}. Not retried.
	 *
	 * @throws IllegalArgumentException at once when a rank is negative
	 */
	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		checkRank("dpGroup", dpGroup);
		checkRank("tpRank", tpRank);
		checkRank("ppRank", ppRank);
		return rankRoute(bootstrap, dpGroup, 0, tpRank, ppRank).map(RankRoute::endpoint);
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>CP rank 0 is looked up as {@link #rankEndpoint(HostPort, int, int, int)} does; another CP rank with today's
	 * SGLang query, {@code GET /route?prefill_dp_rank=G&prefill_cp_rank=C&target_tp_rank=T&target_pp_rank=P} (the older
	 * protocol has no CP dimension). Not retried.
	 *
	 * @throws IllegalArgumentException at once when a rank is negative
	 */
	@Override
	public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		return rankRoute(bootstrap, dpGroup, cpRank, tpRank, ppRank).map(RankRoute::endpoint);
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Looks the rank up as {@link #rankEndpoint(HostPort, int, int, int, int)} does and reads
	 * {@code kvferry_incarnation} too, which kvferry's bootstrap server returns for a rank that registered one.
	 * Not retried.
	 *
	 * @throws IllegalArgumentException at once when a rank is negative
	 */
	@Override
	public Mono<RankRoute> rankRoute(HostPort bootstrap, int dpGroup, int cpRank, int tpRank, int ppRank) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		checkRank("cpRank", cpRank);
		checkRank("dpGroup", dpGroup);
		checkRank("tpRank", tpRank);
		checkRank("ppRank", ppRank);
		String url = baseUrl(bootstrap) + ROUTE + (cpRank == 0
				? "?engine_rank=" + tpRank + "&target_dp_group=" + dpGroup + "&target_pp_rank=" + ppRank
				: "?prefill_dp_rank=" + dpGroup + "&prefill_cp_rank=" + cpRank + "&target_tp_rank=" + tpRank
						+ "&target_pp_rank=" + ppRank);
		return http.exchange(HttpMethod.GET, url, null)
				.map(body -> BootstrapCodec.decodeRankRoute(BootstrapHttp.call(HttpMethod.GET, url), body));
	}

	/**
	 * {@inheritDoc}
	 *
	 * <p>Not retried: a heartbeat decides itself how many misses make a dead peer.
	 */
	@Override
	public Mono<Void> health(HostPort bootstrap) {
		Objects.requireNonNull(bootstrap, "bootstrap");
		return http.exchange(HttpMethod.GET, baseUrl(bootstrap) + HEALTH, null).then();
	}

	/**
	 * Closes this client's connection pool, if it created one (not the pool of a client given by
	 * {@link #httpClient}), without waiting. Later calls fail with
	 * {@link BootstrapException.Kind#OTHER}; calls in flight may fail. Idempotent, any thread.
	 */
	@Override
	public void dispose() {
		http.dispose();
	}

	/** @return whether {@link #dispose()} was called */
	@Override
	public boolean isDisposed() {
		return http.isDisposed();
	}

	private ReactorBootstrapClient with(Consumer<BootstrapClientSettings> edit) {
		BootstrapClientSettings copy = settings.copy();
		edit.accept(copy);
		return new ReactorBootstrapClient(copy);
	}

	/** @return this client's settings, for tests of this package; never edit them */
	BootstrapClientSettings settings() {
		return settings;
	}

	private static Mono<Long> retryDelay(RegisterRetry retry, String url, long retries, Throwable failure,
			Scheduler delays) {
		Duration delay = retry.nextDelay(retries, failure);
		if (delay == null) {
			return Mono.error(failure);
		}
		LOG.warn("Registration attempt {}/{} with {} failed, retrying in {} ms: {}", retries + 1, retry.attempts(), url,
				delay.toMillis(), failure.getMessage());
		return Mono.delay(delay, delays);
	}

	/** @return {@code http://host:port}, or {@code https://host:port} when secured; IPv6 bracketed */
	private String baseUrl(HostPort bootstrap) {
		return settings.sslContext == null ? bootstrap.httpUrl() : "https://" + bootstrap;
	}

	private static void checkRank(String name, int rank) {
		if (rank < 0) {
			throw new IllegalArgumentException(name + " : " + rank + " (expected: >= 0)");
		}
	}
}
