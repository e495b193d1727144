package io.kvferry.bootstrap.server.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.IntNode;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RouteTableTest {

	private final RouteTable table = new RouteTable();

	@Test
	void firstRegistrationFixesTheInstanceSizes() {
		assertThat(table.topology()).isNull();
		table.register(prefill(2, 1, 1, 0, 0, 0, 5000));
		table.register(prefill(8, 1, 1, 1, 0, 0, 5001));
		PrefillTopology topology = table.topology();
		assertThat(topology.attnTpSize()).isEqualTo(2);
		assertThat(topology.dpSize()).isEqualTo(1);
		assertThat(topology.totalRanks()).isEqualTo(2);
		assertThat(table.isReady()).isTrue();
	}

	@Test
	void theFirstRegistrationWithADtypeOrHttpPortFixesThemAndTheFirstRegistrationFixesTheRest() {
		table.register(instance(0, null, null, false, Map.of("x", IntNode.valueOf(1))));
		table.register(instance(1, "auto", 30000, true, Map.of("x", IntNode.valueOf(2), "y", IntNode.valueOf(3))));
		table.register(instance(2, "fp8_e4m3", 31000, true, Map.of()));
		PrefillTopology fixed = table.topology();
		assertThat(fixed.kvCacheDtype()).isEqualTo("auto");
		assertThat(fixed.prefillHttpPort()).isEqualTo(30000);
		assertThat(fixed.enableDsaCacheLayerSplit()).isFalse();
		assertThat(fixed.passedThrough()).isEqualTo(Map.of("x", IntNode.valueOf(1)));
	}

	@Test
	void rejectsARankThatDoesNotFitTheFixedSizes() {
		table.register(prefill(2, 1, 1, 0, 0, 0, 5000));
		assertThatThrownBy(() -> table.register(prefill(8, 1, 1, 5, 0, 0, 5005)))
				.isInstanceOfSatisfying(RequestException.class, e -> assertThat(e.status()).isEqualTo(400))
				.hasMessageStartingWith("attn_tp_rank : 5 (expected: 0..1");
		assertThatThrownBy(() -> table.register(prefill(2, 4, 1, 0, 3, 0, 5005)))
				.hasMessageStartingWith("attn_dp_rank : 3 (expected: 0..0");
		assertThatThrownBy(() -> table.register(prefill(2, 1, 3, 0, 0, 2, 5005)))
				.hasMessageStartingWith("pp_rank : 2 (expected: 0..0");
		assertThat(table.registeredCount()).isEqualTo(1);
	}

	@Test
	void reRegistrationOverwritesWithoutCountingTwice() {
		assertThat(table.register(prefill(2, 1, 1, 0, 0, 0, 5000))).isEqualTo(RouteTable.Outcome.ADDED);
		assertThat(table.register(prefill(2, 1, 1, 0, 0, 0, 6000))).isEqualTo(RouteTable.Outcome.REPLACED);
		assertThat(table.register(prefill(2, 1, 1, 0, 0, 0, 6000))).isEqualTo(RouteTable.Outcome.REPLACED);
		assertThat(table.registeredCount()).isEqualTo(1);
		assertThat(table.isReady()).isFalse();
		assertThat(table.lookup(new RankKey(0, 0, 0, 0))).isEqualTo(new RankEndpoint("10.0.0.1", 6000));
		assertThat(table.register(prefill(2, 1, 1, 1, 0, 0, 5001))).isEqualTo(RouteTable.Outcome.ADDED);
		assertThat(table.registeredCount()).isEqualTo(2);
		assertThat(table.isReady()).isTrue();
	}

	@Test
	void countsDistinctRanksAcrossEveryDimension() {
		int count = 0;
		for (int d = 0; d < 2; d++) {
			for (int t = 0; t < 3; t++) {
				for (int p = 0; p < 2; p++) {
					assertThat(table.isReady()).isFalse();
					table.register(prefill(3, 2, 2, t, d, p, 5000 + count));
					count++;
					assertThat(table.registeredCount()).isEqualTo(count);
				}
			}
		}
		assertThat(table.isReady()).isTrue();
		assertThat(table.lookup(new RankKey(1, 0, 2, 1))).isEqualTo(new RankEndpoint("10.0.0.1", 5011));
		assertThat(table.lookup(new RankKey(2, 0, 0, 0))).isNull();
	}

	@Test
	void ignoresNonPrefillRolesEntirely() {
		Registration decode = new Registration("Decode", 4, 0, 1, 0, 1, 0, 1, 0, 1, 0, "10.0.0.9", 7000, 16, null,
				true, false, null, Map.of());
		assertThat(table.register(decode)).isEqualTo(RouteTable.Outcome.IGNORED);
		assertThat(table.topology()).isNull();
		assertThat(table.registeredCount()).isZero();
	}

	@Test
	void concurrentRegistrationsKeepOneTopologyAndCountEachRankOnce() throws Exception {
		int threads = 8;
		int tp = 4;
		int dp = 4;
		int pp = 2;
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try {
			CountDownLatch start = new CountDownLatch(1);
			Set<Integer> portsUsed = ConcurrentHashMap.newKeySet();
			List<Future<?>> done = new ArrayList<>();
			for (int thread = 0; thread < threads; thread++) {
				int port = 10000 + thread;
				portsUsed.add(port);
				done.add(pool.submit(() -> {
					List<Registration> mine = new ArrayList<>();
					for (int d = 0; d < dp; d++) {
						for (int t = 0; t < tp; t++) {
							for (int p = 0; p < pp; p++) {
								mine.add(prefill(tp, dp, pp, t, d, p, port));
							}
						}
					}
					Collections.shuffle(mine, new Random(port));
					start.await(30, TimeUnit.SECONDS);
					mine.forEach(table::register);
					return null;
				}));
			}
			start.countDown();
			for (Future<?> future : done) {
				future.get(60, TimeUnit.SECONDS);
			}
			assertThat(table.registeredCount()).isEqualTo(dp * tp * pp);
			assertThat(table.isReady()).isTrue();
			for (int d = 0; d < dp; d++) {
				for (int t = 0; t < tp; t++) {
					for (int p = 0; p < pp; p++) {
						RankEndpoint endpoint = table.lookup(new RankKey(d, 0, t, p));
						assertThat(endpoint.rankIp()).isEqualTo("10.0.0.1");
						assertThat(portsUsed).contains(endpoint.rankPort());
					}
				}
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	/** TP rank {@code tpRank} of a TP 4 instance with the given instance-level fields. */
	private static Registration instance(int tpRank, String dtype, Integer httpPort, boolean dsa,
			Map<String, JsonNode> unknown) {
		return new Registration(Registration.PREFILL, 4, tpRank, 1, 0, 1, 0, 1, 0, 1, 0, "10.0.0.1", 5000 + tpRank, 16,
				dtype, true, dsa, httpPort, unknown);
	}

	/** A DP-attention registration (system_dp_size 1), page size 16. */
	private static Registration prefill(int tpSize, int dpSize, int ppSize, int tpRank, int dpRank, int ppRank,
			int port) {
		return new Registration(Registration.PREFILL, tpSize, tpRank, 1, 0, dpSize, dpRank, ppSize, ppRank, 1, 0,
				"10.0.0.1", port, 16, null, true, false, null, Map.of());
	}
}
