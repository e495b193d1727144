package io.kvferry.bootstrap.server.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Encoder URLs as SGLang's encoder bootstrap server keeps them, probed over real HTTP: an encoder that fails three
 * checks in a row is evicted, comes back when it answers again, and is dropped after the evicted TTL; one failed check
 * evicts nothing; an unregistered URL is no longer probed.
 */
class EncoderUrlsTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final Duration TTL = Duration.ofSeconds(600);

	private final AtomicBoolean healthy = new AtomicBoolean(true);
	private final AtomicLong now = new AtomicLong();
	private DisposableServer encoder;
	private EncoderUrls urls;
	private String url;

	@BeforeEach
	void start() {
		encoder = HttpServer.create().host("127.0.0.1").port(0)
				.route(r -> r.get("/health", (req, res) -> healthy.get() ? res.sendString(Mono.just("OK")) : res.status(503).send()))
				.bindNow();
		url = "http://127.0.0.1:" + encoder.port();
		urls = new EncoderUrls(HttpClient.create(), Duration.ofSeconds(2), TTL, now::get);
	}

	@AfterEach
	void stop() {
		encoder.disposeNow();
	}

	private void check() {
		StepVerifier.create(urls.check()).expectComplete().verify(T);
	}

	@Test
	void registerUnregisterAndListKeepRegistrationOrderAndIgnoreRepeats() {
		assertThat(urls.register("http://b:1")).isTrue();
		assertThat(urls.register("http://a:1")).isTrue();
		assertThat(urls.register("http://b:1")).isFalse();
		assertThat(urls.list()).containsExactly("http://b:1", "http://a:1");
		assertThat(urls.unregister("http://b:1")).isTrue();
		assertThat(urls.unregister("http://b:1")).isFalse();
		assertThat(urls.list()).containsExactly("http://a:1");
	}

	@Test
	void threeFailedChecksInARowEvictAndAnAnswerRevives() {
		urls.register(url);
		healthy.set(false);
		check();
		check();
		assertThat(urls.list()).as("two failures evict nothing").containsExactly(url);
		healthy.set(true);
		check();
		healthy.set(false);
		check();
		check();
		assertThat(urls.list()).as("the count restarts after an answer").containsExactly(url);
		check();
		assertThat(urls.list()).isEmpty();

		healthy.set(true);
		check();
		assertThat(urls.list()).as("an evicted encoder that answers comes back").containsExactly(url);
	}

	@Test
	void anEvictedUrlIsDroppedAfterTheTtlAndAnUnreachableOneCountsAsFailed() {
		String dead = "http://127.0.0.1:1";
		urls.register(dead);
		check();
		check();
		check();
		assertThat(urls.list()).isEmpty();
		now.addAndGet(TTL.toNanos());
		check();
		// Dropped for good: had it still been probed, this registration would be the only way back, as it is.
		assertThat(urls.unregister(dead)).as("nothing left to forget").isFalse();
	}

	@Test
	void anUnregisteredUrlIsNotRevived() {
		urls.register(url);
		healthy.set(false);
		check();
		check();
		check();
		assertThat(urls.unregister(url)).isTrue();
		healthy.set(true);
		check();
		assertThat(urls.list()).isEmpty();
	}
}
