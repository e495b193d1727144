package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.http.client.HttpClient;

/**
 * The encoder URLs registered with this server, as SGLang's encoder bootstrap server keeps them: encoders register and
 * unregister their URL, prefill lists them. A health check probes {@code GET <url>/health} of every registered URL;
 * one that fails {@link #FAIL_THRESHOLD} checks in a row is evicted (a busy encoder may miss one probe), an evicted
 * URL keeps being probed and comes back once it answers, and after {@code evictedTtl} without an answer it is dropped
 * for good. An explicit unregister also stops the probing. Thread-safe: the lists change under this object's monitor;
 * probes run outside it.
 */
public final class EncoderUrls {

	private static final Logger log = LoggerFactory.getLogger(EncoderUrls.class);

	/** How often the health check probes, as SGLang's default. */
	public static final Duration CHECK_INTERVAL = Duration.ofSeconds(10);
	/** Bound of one probe, as SGLang's default. */
	public static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);
	/** How long an evicted URL is still probed, as SGLang's default. */
	public static final Duration EVICTED_TTL = Duration.ofSeconds(600);
	/** The answer to a registration without a URL, as SGLang gives it. */
	static final byte[] MISSING_URL = "{\"error\":\"Missing or empty 'url' field\"}".getBytes(StandardCharsets.UTF_8);
	/** Longest URL kept: a registration is a client's word, and the list is answered to every prefill. */
	static final int MAX_URL_LENGTH = 2048;

	/** Failed checks in a row before a URL is evicted. */
	static final int FAIL_THRESHOLD = 3;

	private final HttpClient client;
	private final Duration probeTimeout;
	private final long evictedTtlNanos;
	private final LongSupplier nanoTime;
	// Guarded by this. Insertion order is the order prefill lists them in.
	private final Set<String> urls = new LinkedHashSet<>();
	private final Map<String, Integer> failures = new HashMap<>();
	private final Map<String, Long> evictedAt = new LinkedHashMap<>();

	/**
	 * @param client the client the probes use
	 * @param probeTimeout bound of one probe
	 * @param evictedTtl how long an evicted URL is probed before it is dropped; zero: forever
	 * @param nanoTime the clock of evictions
	 */
	public EncoderUrls(HttpClient client, Duration probeTimeout, Duration evictedTtl, LongSupplier nanoTime) {
		this.client = client;
		this.probeTimeout = probeTimeout;
		this.evictedTtlNanos = evictedTtl.toNanos();
		this.nanoTime = nanoTime;
	}

	/**
	 * @param body a registration's JSON object
	 * @return its {@code url}, or null when it is missing, empty or not a string
	 * @throws RequestException for a URL longer than {@link #MAX_URL_LENGTH} or not http(s)
	 */
	static String url(JsonNode body) {
		JsonNode url = body.get("url");
		if (url == null || !url.isTextual() || url.asText().isEmpty()) {
			return null;
		}
		String text = url.asText();
		if (text.length() > MAX_URL_LENGTH || !(text.startsWith("http://") || text.startsWith("https://"))) {
			throw RequestException.badRequest("url : '" + (text.length() > 100 ? text.substring(0, 100) + "..." : text)
					+ "' (expected: an http:// or https:// URL of at most " + MAX_URL_LENGTH + " characters)");
		}
		return text;
	}

	/** @return true when the URL was added, false when it was registered already */
	public synchronized boolean register(String url) {
		failures.remove(url);
		evictedAt.remove(url);
		boolean added = urls.add(url);
		if (added) {
			log.info("Registered encoder URL: {}", url);
		}
		return added;
	}

	/** @return true when the URL was known (registered or evicted) and is now forgotten */
	public synchronized boolean unregister(String url) {
		boolean removed = urls.remove(url) | evictedAt.remove(url) != null;
		failures.remove(url);
		if (removed) {
			log.info("Unregistered encoder URL: {}", url);
		}
		return removed;
	}

	/** @return the registered URLs, in registration order */
	public synchronized List<String> list() {
		return new ArrayList<>(urls);
	}

	/** @return the periodic health check, every {@code interval} until disposed */
	public Disposable checkEvery(Duration interval) {
		return Flux.interval(interval, interval).onBackpressureDrop().concatMap(tick -> check(), 1).subscribe();
	}

	/**
	 * @return {@code {"encoder_urls": [...]}} as SGLang's FastAPI server writes it: compact, no blanks between tokens
	 */
	byte[] listAnswer() {
		try {
			return Json.MAPPER.writeValueAsBytes(Map.of("encoder_urls", list()));
		}
		catch (JsonProcessingException e) {
			throw new IllegalStateException("cannot write the encoder list", e);
		}
	}

	/**
	 * Probes every registered and evicted URL once, then evicts, revives and drops as the answers say.
	 *
	 * @return completes when every probe answered or timed out
	 */
	public Mono<Void> check() {
		List<String> candidates;
		synchronized (this) {
			long now = nanoTime.getAsLong();
			if (evictedTtlNanos > 0) {
				List<String> expired = evictedAt.entrySet().stream()
						.filter(e -> now - e.getValue() >= evictedTtlNanos).map(Map.Entry::getKey).toList();
				expired.forEach(evictedAt::remove);
				if (!expired.isEmpty()) {
					log.warn("Health check permanently dropped {} encoder(s) after {} s unhealthy: {}", expired.size(),
							Duration.ofNanos(evictedTtlNanos).toSeconds(), expired);
				}
			}
			Set<String> all = new LinkedHashSet<>(urls);
			all.addAll(evictedAt.keySet());
			candidates = new ArrayList<>(all);
		}
		return Flux.fromIterable(candidates)
				.flatMap(url -> probe(url).map(ok -> Map.entry(url, ok)))
				.collectList()
				.doOnNext(this::apply)
				.then();
	}

	private synchronized void apply(List<Map.Entry<String, Boolean>> results) {
		long now = nanoTime.getAsLong();
		for (Map.Entry<String, Boolean> r : results) {
			String url = r.getKey();
			boolean evicted = evictedAt.containsKey(url);
			if (!urls.contains(url) && !evicted) {
				continue; // unregistered while its probe ran
			}
			if (r.getValue()) {
				failures.remove(url);
				if (evicted) {
					evictedAt.remove(url);
					urls.add(url);
					log.info("Health check revived encoder {}", url);
				}
			}
			else if (!evicted) {
				int n = failures.merge(url, 1, Integer::sum);
				if (n >= FAIL_THRESHOLD) {
					urls.remove(url);
					failures.remove(url);
					evictedAt.put(url, now);
					log.warn("Health check evicted encoder {} after {} consecutive failures (will re-add when healthy)",
							url, FAIL_THRESHOLD);
				}
			}
		}
	}

	private Mono<Boolean> probe(String url) {
		return client.get().uri(url + "/health").responseSingle((response, body) -> body.asByteArray()
				.defaultIfEmpty(new byte[0]).map(ignored -> response.status().code() == 200))
				.timeout(probeTimeout)
				.onErrorReturn(false)
				.defaultIfEmpty(false);
	}
}
