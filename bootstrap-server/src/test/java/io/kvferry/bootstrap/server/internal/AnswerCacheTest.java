package io.kvferry.bootstrap.server.internal;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Look-up bodies are written once per value, as Jackson writes them, and the cache stays bounded. */
class AnswerCacheTest {

	private final AnswerCache<RankEndpoint> cache = new AnswerCache<>(RankEndpoint::toJson);

	@Test
	void answersEqualValuesWithTheBodyWrittenOnce() {
		byte[] first = cache.body(new RankEndpoint("fd00::1", 6000));
		byte[] again = cache.body(new RankEndpoint("fd00::1", 6000));
		byte[] other = cache.body(new RankEndpoint("fd00::1", 6001));

		assertThat(again).isSameAs(first);
		assertThat(new String(first, StandardCharsets.UTF_8)).isEqualTo("{\"rank_ip\": \"fd00::1\", \"rank_port\": 6000}");
		assertThat(first).isEqualTo(Json.write(new RankEndpoint("fd00::1", 6000).toJson()));
		assertThat(new String(other, StandardCharsets.UTF_8)).endsWith("6001}");
	}

	@Test
	void startsOverPastItsBound() {
		for (int port = 1; port <= AnswerCache.MAX_ENTRIES + 10; port++) {
			cache.body(new RankEndpoint("10.0.0.1", port));
			assertThat(cache.size()).isLessThanOrEqualTo(AnswerCache.MAX_ENTRIES);
		}
		assertThat(cache.size()).isEqualTo(10);
	}
}
