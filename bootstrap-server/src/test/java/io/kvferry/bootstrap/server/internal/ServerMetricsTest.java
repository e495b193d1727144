package io.kvferry.bootstrap.server.internal;

import java.time.Duration;

import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.codec.http.HttpMethod;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ServerMetricsTest {

	private final RouteTable routes = new RouteTable();
	private final RoomDpRankTable rooms = new RoomDpRankTable(Duration.ofSeconds(1), 10, () -> 0L);
	private final ConnectionLimit connections = new ConnectionLimit(10, 2);

	@Test
	void noneRecordsNothingAndCannotBeScraped() {
		ServerMetrics none = ServerMetrics.none();
		none.request("/route", HttpMethod.GET, 200);
		none.registration(RouteTable.Outcome.ADDED);
		none.lookup(ServerMetrics.RANK, ServerMetrics.FOUND);
		none.dpRankRegistration(true);
		none.dpRankRegistration(false);
		none.dpRankLookups(3, 1);
		Disposable gauges = none.registerGauges(routes, rooms);
		assertThat(gauges.isDisposed()).isTrue();
		assertThat(none.registerConnectionGauges(connections).isDisposed()).isTrue();
		assertThat(none.canScrape()).isFalse();
		assertThatThrownBy(none::scrape).isInstanceOf(IllegalStateException.class);
	}

	@Test
	void boundsTheTagValuesOfRequests() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		ServerMetrics metrics = ServerMetrics.of(registry);
		metrics.request("/route", HttpMethod.GET, 200);
		metrics.request("/route", HttpMethod.GET, 200);
		metrics.request("/anything/else", HttpMethod.valueOf("BREW"), 404);
		metrics.request("/health", HttpMethod.GET, -1);
		assertThat(registry.get(ServerMetrics.REQUESTS).tags("route", "/route", "method", "GET", "status", "200")
				.counter().count()).isEqualTo(2.0);
		assertThat(registry.get(ServerMetrics.REQUESTS).tags("route", "other", "method", "other", "status", "404")
				.counter().count()).isEqualTo(1.0);
		assertThat(registry.get(ServerMetrics.REQUESTS).tags("status", "closed").counter().count()).isEqualTo(1.0);
		assertThat(metrics.canScrape()).isFalse();
	}

	@Test
	void gaugesFollowTheTablesUntilDisposed() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		ServerMetrics metrics = ServerMetrics.of(registry);
		Disposable gauges = metrics.registerGauges(routes, rooms);
		Disposable connectionGauges = metrics.registerConnectionGauges(connections);
		assertThat(registry.get(ServerMetrics.EXPECTED_RANKS).gauge().value()).isZero();
		rooms.put(1, 0);
		assertThat(registry.get(ServerMetrics.DP_RANK_ENTRIES).gauge().value()).isEqualTo(1.0);
		assertThat(registry.get(ServerMetrics.OPEN_CONNECTIONS).gauge().value()).isZero();
		gauges.dispose();
		assertThat(registry.find(ServerMetrics.DP_RANK_ENTRIES).gauge()).isNull();
		connectionGauges.dispose();
		assertThat(registry.getMeters()).isEmpty();
	}

	@Test
	void findsAPrometheusRegistryInNestedComposites() {
		PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
		CompositeMeterRegistry inner = new CompositeMeterRegistry().add(prometheus);
		CompositeMeterRegistry outer = new CompositeMeterRegistry().add(new SimpleMeterRegistry()).add(inner);
		ServerMetrics metrics = ServerMetrics.of(outer);
		metrics.dpRankLookups(3, 1);
		assertThat(metrics.canScrape()).isTrue();
		assertThat(metrics.scrape()).contains("kvferry_bootstrap_dp_rank_lookups_total{outcome=\"not_found\"} 2.0");
		assertThat(metrics.toString()).contains("scrapeable");
		prometheus.close();
	}
}
