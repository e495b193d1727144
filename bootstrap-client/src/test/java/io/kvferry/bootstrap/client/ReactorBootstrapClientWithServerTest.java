package io.kvferry.bootstrap.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.BootstrapException.Kind;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.server.BootstrapServer;
import io.kvferry.bootstrap.server.DisposableBootstrapServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ReactorBootstrapClient} against the real kvferry bootstrap server on loopback: registration, parallel info
 * and rank look-up round trips, readiness, unknown ranks, and many ranks registering at once.
 */
class ReactorBootstrapClientWithServerTest {

	private static final Duration VERIFY = Duration.ofSeconds(20);

	private static final int PAGE_SIZE = 16;

	private DisposableBootstrapServer server;
	private ReactorBootstrapClient client;

	@AfterEach
	void dispose() {
		if (client != null) {
			client.dispose();
		}
		if (server != null) {
			server.disposeNow();
		}
	}

	private HostPort start(String host) {
		server = BootstrapServer.create().host(host).port(0).bindNow();
		client = ReactorBootstrapClient.create();
		return server.address();
	}

	/** The rank with 0-based index {@code i} of a dp × tp × pp instance, listening on port 20000 + i. */
	private static PrefillRegistration rank(int dp, int tp, int pp, int i) {
		int tpRank = i % tp;
		int ppRank = (i / tp) % pp;
		int dpRank = i / (tp * pp);
		ParallelLayout layout = new ParallelLayout(tp, tpRank, dp, dpRank, 1, 0, pp, ppRank);
		return PrefillRegistration.prefill(layout, "10.0." + dpRank + "." + (tpRank * pp + ppRank), 20000 + i,
				PAGE_SIZE);
	}

	@Test
	void registeredRankIsFoundThroughParallelInfoAndRankLookup() {
		HostPort bootstrap = start("127.0.0.1");
		PrefillRegistration registration = PrefillRegistration.prefill(ParallelLayout.SINGLE, "10.1.1.1", 17000, 32);

		StepVerifier.create(client.health(bootstrap)
						.then(client.register(bootstrap, registration))
						.then(client.parallelInfo(bootstrap)))
				.expectNext(new PrefillParallelInfo(1, 1, 1, 32))
				.expectComplete()
				.verify(VERIFY);
		StepVerifier.create(client.rankEndpoint(bootstrap, 0, 0, 0))
				.expectNext(new HostPort("10.1.1.1", 17000))
				.expectComplete()
				.verify(VERIFY);
	}

	@Test
	void contextParallelRanksRegisterApartAndAreFoundByTheirCpRank() {
		HostPort bootstrap = start("127.0.0.1");
		ParallelLayout cp0 = ParallelLayout.SINGLE.withAttnCp(2, 0);
		PrefillRegistration first = new PrefillRegistration(PrefillRegistration.PREFILL, cp0, "10.2.0.1", 17100,
				PAGE_SIZE, false, true);
		PrefillRegistration second = new PrefillRegistration(PrefillRegistration.PREFILL, cp0.withAttnCp(2, 1),
				"10.2.0.2", 17101, PAGE_SIZE, false, true);
		// Not ready with one of the two CP ranks: the server counts CP ranks, which it learns from the body.
		StepVerifier.create(client.register(bootstrap, first).then(client.parallelInfo(bootstrap)))
				.expectErrorSatisfies(e -> assertThat(((BootstrapException) e).kind()).isEqualTo(Kind.NOT_READY))
				.verify(VERIFY);
		StepVerifier.create(client.register(bootstrap, second).then(client.parallelInfo(bootstrap)))
				.expectNext(new PrefillParallelInfo(1, 1, 1, PAGE_SIZE))
				.expectComplete()
				.verify(VERIFY);
		StepVerifier.create(client.rankEndpoint(bootstrap, 0, 0, 0, 0))
				.expectNext(new HostPort("10.2.0.1", 17100))
				.expectComplete()
				.verify(VERIFY);
		StepVerifier.create(client.rankEndpoint(bootstrap, 0, 1, 0, 0))
				.expectNext(new HostPort("10.2.0.2", 17101))
				.expectComplete()
				.verify(VERIFY);
		StepVerifier.create(client.rankEndpoint(bootstrap, 0, 2, 0, 0))
				.expectErrorSatisfies(e -> assertThat(((BootstrapException) e).kind()).isEqualTo(Kind.NOT_FOUND))
				.verify(VERIFY);
	}

	@Test
	void reRegistrationOverwritesTheEndpoint() {
		HostPort bootstrap = start("127.0.0.1");
		ParallelLayout layout = ParallelLayout.tp(2, 1);

		StepVerifier.create(client.register(bootstrap, PrefillRegistration.prefill(layout, "10.1.1.1", 17000, 16))
						.then(client.register(bootstrap, PrefillRegistration.prefill(layout, "10.1.1.2", 17002, 16)))
						.then(client.rankEndpoint(bootstrap, 0, 1, 0)))
				.expectNext(new HostPort("10.1.1.2", 17002))
				.expectComplete()
				.verify(VERIFY);
	}

	@Test
	void parallelInfoIsNotReadyUntilEveryRankRegistered() {
		HostPort bootstrap = start("127.0.0.1");

		StepVerifier.create(client.register(bootstrap, rank(1, 2, 1, 0)).then(client.parallelInfo(bootstrap)))
				.expectErrorSatisfies(error -> {
					assertThat(error).isInstanceOf(BootstrapException.class);
					BootstrapException failure = (BootstrapException) error;
					assertThat(failure.kind()).isEqualTo(Kind.NOT_READY);
					assertThat(failure.status()).isEqualTo(503);
					assertThat(failure.getMessage())
							.contains("http://" + bootstrap + "/route", "(1 workers registered)");
				})
				.verify(VERIFY);

		StepVerifier.create(client.register(bootstrap, rank(1, 2, 1, 1)).then(client.parallelInfo(bootstrap)))
				.expectNext(new PrefillParallelInfo(2, 1, 1, PAGE_SIZE))
				.expectComplete()
				.verify(VERIFY);
	}

	@Test
	void unknownRankIsNotFound() {
		HostPort bootstrap = start("127.0.0.1");

		StepVerifier.create(client.register(bootstrap, rank(1, 2, 1, 0)).then(client.rankEndpoint(bootstrap, 0, 1, 0)))
				.expectErrorSatisfies(error -> {
					assertThat(error).isInstanceOf(BootstrapException.class);
					BootstrapException failure = (BootstrapException) error;
					assertThat(failure.kind()).isEqualTo(Kind.NOT_FOUND);
					assertThat(failure.status()).isEqualTo(404);
					assertThat(failure.isRetryable()).isFalse();
					assertThat(failure.getMessage()).startsWith("GET http://" + bootstrap
							+ "/route?engine_rank=1&target_dp_group=0&target_pp_rank=0: 404").contains("not found");
				})
				.verify(VERIFY);
	}

	@Test
	void thirtyTwoRanksRegisteringAtOnceAreAllVisible() {
		HostPort bootstrap = start("127.0.0.1");
		int dp = 2;
		int tp = 8;
		int pp = 2;
		int ranks = dp * tp * pp;

		StepVerifier.create(Flux.range(0, ranks).flatMap(i -> client.register(bootstrap, rank(dp, tp, pp, i)), ranks))
				.expectComplete()
				.verify(VERIFY);

		assertThat(server.registeredCount()).isEqualTo(ranks);
		List<HostPort> expected = new ArrayList<>();
		for (int i = 0; i < ranks; i++) {
			PrefillRegistration registration = rank(dp, tp, pp, i);
			expected.add(new HostPort(registration.rankIp(), registration.rankPort()));
		}
		StepVerifier.create(client.parallelInfo(bootstrap))
				.expectNext(new PrefillParallelInfo(tp, dp, pp, PAGE_SIZE))
				.expectComplete()
				.verify(VERIFY);
		StepVerifier.create(Flux.range(0, ranks)
						.flatMapSequential(i -> {
							ParallelLayout layout = rank(dp, tp, pp, i).layout();
							return client.rankEndpoint(bootstrap, layout.dpGroup(), layout.attnTpRank(),
									layout.ppRank());
						}, ranks)
						.collectList())
				.assertNext(endpoints -> assertThat(endpoints).containsExactlyElementsOf(expected))
				.expectComplete()
				.verify(VERIFY);
	}

	@Test
	void ipv6BootstrapServerIsReachable() {
		HostPort bootstrap = HostPort.parse("[::1]:" + start("::1").port());
		PrefillRegistration registration = PrefillRegistration.prefill(ParallelLayout.SINGLE, "fd00::8", 17000,
				PAGE_SIZE);

		assertThat(bootstrap.httpUrl()).isEqualTo("http://[::1]:" + bootstrap.port());
		StepVerifier.create(client.register(bootstrap, registration)
						.then(client.parallelInfo(bootstrap))
						.then(client.rankEndpoint(bootstrap, 0, 0, 0)))
				.expectNext(new HostPort("fd00::8", 17000))
				.expectComplete()
				.verify(VERIFY);
	}
}
