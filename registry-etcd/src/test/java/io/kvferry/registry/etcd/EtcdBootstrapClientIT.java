package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.UUID;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RankRoute;
import io.kvferry.bootstrap.RegistryChange;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** The registry against one real etcd member: registration, look-ups, withdrawal, watch, failures. */
class EtcdBootstrapClientIT {

	static final Duration T = Duration.ofSeconds(20);
	static final HostPort A = HostPort.parse("prefill-a:8998");

	static EtcdCluster etcd;
	EtcdBootstrapClient client;

	@BeforeAll
	static void startEtcd() {
		etcd = EtcdCluster.start(1);
	}

	@AfterAll
	static void stopEtcd() {
		if (etcd != null) {
			etcd.close();
		}
	}

	@BeforeEach
	void createClient() {
		// A prefix per test keeps the tests' keys apart in the shared member.
		client = EtcdBootstrapClient.create(etcd.endpoints()).leaseTtl(Duration.ofSeconds(2))
				.timeout(Duration.ofSeconds(15))
				.prefix("t-" + UUID.randomUUID());
	}

	@AfterEach
	void disposeClient() {
		client.dispose();
	}

	static PrefillRegistration rank(int tpSize, int tpRank, int port) {
		return PrefillRegistration.prefill(ParallelLayout.tp(tpSize, tpRank), "10.0.0." + (tpRank + 1), port, 16);
	}

	@Test
	void registersResolvesAndWithdrawsRanks() {
		StepVerifier.create(client.register(A, rank(2, 0, 17000))).expectComplete().verify(T);
		StepVerifier.create(client.parallelInfo(A))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BootstrapException.class)
						.hasMessageContaining("1 of 2 ranks registered")
						.extracting(x -> ((BootstrapException) x).kind()).isEqualTo(BootstrapException.Kind.NOT_READY))
				.verify(T);
		StepVerifier.create(client.register(A, rank(2, 1, 17001))).expectComplete().verify(T);
		StepVerifier.create(client.parallelInfo(A)).expectNext(new PrefillParallelInfo(2, 1, 1, 16)).expectComplete()
				.verify(T);
		StepVerifier.create(client.rankEndpoint(A, 0, 1, 0)).expectNext(new HostPort("10.0.0.2", 17001))
				.expectComplete().verify(T);
		StepVerifier.create(client.health(A)).expectComplete().verify(T);

		StepVerifier.create(client.deregister(A, rank(2, 1, 17001))).expectComplete().verify(T);
		StepVerifier.create(client.rankEndpoint(A, 0, 1, 0))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BootstrapException.class)
						.hasMessageContaining("not registered in etcd")
						.extracting(x -> ((BootstrapException) x).kind()).isEqualTo(BootstrapException.Kind.NOT_FOUND))
				.verify(T);
		StepVerifier.create(client.parallelInfo(A)).expectError(BootstrapException.class).verify(T);
		StepVerifier.create(client.rankEndpoint(A, 0, 0, 0)).expectNext(new HostPort("10.0.0.1", 17000))
				.expectComplete().verify(T);
	}

	@Test
	void nothingHappensBeforeSubscription() {
		Mono<Void> register = client.register(A, rank(1, 0, 17000));
		StepVerifier.create(client.rankEndpoint(A, 0, 0, 0)).expectError(BootstrapException.class).verify(T);
		StepVerifier.create(register).expectComplete().verify(T);
		StepVerifier.create(client.rankEndpoint(A, 0, 0, 0)).expectNext(new HostPort("10.0.0.1", 17000))
				.expectComplete().verify(T);
	}

	@Test
	void theFirstRegistrationFixesTheSizes() {
		StepVerifier.create(client.register(A, rank(2, 0, 17000))).expectComplete().verify(T);
		StepVerifier.create(client.register(A, rank(4, 3, 17003)))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BootstrapException.class)
						.hasMessageContaining("attn_tp_rank : 3 (expected: 0..1 for the attn_tp_size 2 fixed by the "
								+ "instance's first registration)")
						.extracting(x -> ((BootstrapException) x).kind())
						.isEqualTo(BootstrapException.Kind.BAD_REQUEST))
				.verify(T);
		StepVerifier.create(client.register(A, rank(4, 1, 17001))).expectComplete().verify(T);
		StepVerifier.create(client.parallelInfo(A)).expectNext(new PrefillParallelInfo(2, 1, 1, 16)).expectComplete()
				.verify(T);
	}

	@Test
	void anInstanceWithNoRankLeftMayComeBackWithOtherSizes() {
		StepVerifier.create(client.register(A, rank(1, 0, 17000))).expectComplete().verify(T);
		Mono<Void> restart = client.deregister(A, rank(1, 0, 17000)).then(client.register(A, rank(2, 0, 17000)))
				.cache();
		StepVerifier.create(RegistryWatching.changesThen(client, () -> restart.subscribe(null, e -> { })).next())
				.expectNext(new RegistryChange(A, RegistryChange.Kind.RANK_REMOVED, 0, 0, 0))
				.expectComplete()
				.verify(T);
		StepVerifier.create(restart).expectComplete().verify(T);
		StepVerifier.create(client.register(A, rank(2, 1, 17001)).then(client.parallelInfo(A)))
				.expectNext(new PrefillParallelInfo(2, 1, 1, 16)).expectComplete().verify(T);
	}

	@Test
	void theWatchReportsMovedAndRemovedRanksAndResizedInstances() {
		StepVerifier.create(client.register(A, rank(1, 0, 17000))).expectComplete().verify(T);
		Mono<Void> steps = client.register(A, rank(1, 0, 17000)) // the same endpoint again: no change
				.then(client.register(A, rank(1, 0, 17009)))
				.then(client.deregister(A, rank(1, 0, 17009)))
				.then(client.register(A, rank(2, 0, 17000)))
				.cache();
		StepVerifier.create(RegistryWatching.changesThen(client, () -> steps.subscribe(null, e -> { })).take(3))
				.expectNext(new RegistryChange(A, RegistryChange.Kind.RANK_MOVED, 0, 0, 0))
				.expectNext(new RegistryChange(A, RegistryChange.Kind.RANK_REMOVED, 0, 0, 0))
				.expectNext(RegistryChange.instance(A))
				.expectComplete()
				.verify(T);
		StepVerifier.create(steps).expectComplete().verify(T);
	}

	@Test
	void aRankRegisteredAgainAtItsEndpointWithAnotherIncarnationIsReportedRestarted() {
		StepVerifier.create(client.register(A, rank(1, 0, 17000).withIncarnation(1))).expectComplete().verify(T);
		StepVerifier.create(client.rankRoute(A, 0, 0, 0, 0))
				.expectNext(new RankRoute(new HostPort("10.0.0.1", 17000), 1)).expectComplete().verify(T);
		Mono<Void> restart = client.register(A, rank(1, 0, 17000).withIncarnation(2)).cache();
		StepVerifier.create(RegistryWatching.changesThen(client, () -> restart.subscribe(null, e -> { })).next())
				.expectNext(new RegistryChange(A, RegistryChange.Kind.RANK_RESTARTED, 0, 0, 0, 2))
				.expectComplete()
				.verify(T);
		StepVerifier.create(restart.then(client.rankRoute(A, 0, 0, 0, 0)))
				.expectNext(new RankRoute(new HostPort("10.0.0.1", 17000), 2)).expectComplete().verify(T);
	}

	@Test
	void renewedLeasesOutliveTheirTtl() {
		StepVerifier.create(client.register(A, rank(1, 0, 17000))).expectComplete().verify(T);
		// Three TTLs later the key is still there: the client renewed its lease.
		StepVerifier.create(Mono.delay(Duration.ofSeconds(6)).then(client.rankEndpoint(A, 0, 0, 0)))
				.expectNext(new HostPort("10.0.0.1", 17000))
				.expectComplete().verify(T);
	}

	@Test
	void anUnreachableEtcdFailsCallsWithinTheTimeout() {
		EtcdBootstrapClient nowhere = EtcdBootstrapClient.create(List.of(new HostPort("127.0.0.1", 1)))
				.timeout(Duration.ofSeconds(1));
		try {
			StepVerifier.create(nowhere.rankEndpoint(A, 0, 0, 0))
					.expectErrorSatisfies(e -> {
						assertThat(e).isInstanceOf(BootstrapException.class)
								.hasMessageContaining("rank dp=0 tp=0 pp=0 of prefill-a:8998 on etcd [http://127.0.0.1:1]");
						assertThat(((BootstrapException) e).kind()).isIn(BootstrapException.Kind.TIMEOUT,
								BootstrapException.Kind.UNREACHABLE);
						assertThat(((BootstrapException) e).isRetryable()).isTrue();
					})
					.verify(T);
		}
		finally {
			nowhere.dispose();
		}
	}

	@Test
	void aUserGivenToAnEtcdWithoutAuthenticationFailsSayingSo() {
		// jetcd, unlike etcdctl, does not fall back to no user: say so rather than fail with a bare status.
		EtcdBootstrapClient withUser = client.credentials("kvferry", "pw");
		try {
			StepVerifier.create(withUser.rankEndpoint(A, 0, 0, 0))
					.expectErrorSatisfies(e -> {
						assertThat(e).isInstanceOf(BootstrapException.class).hasMessageContaining("authentication "
								+ "failed: user 'kvferry' was given but etcd has authentication disabled");
						assertThat(((BootstrapException) e).kind()).isEqualTo(BootstrapException.Kind.UNAUTHORIZED);
					})
					.verify(T);
		}
		finally {
			withUser.dispose();
		}
	}

	@Test
	void endpointsAndSettingsAreChecked() {
		assertThat(EtcdBootstrapClient.parseEndpoints("etcd://127.0.0.1:2379,[::1]:2380"))
				.containsExactly(new HostPort("127.0.0.1", 2379), new HostPort("::1", 2380));
		assertThatThrownBy(() -> EtcdBootstrapClient.parseEndpoints("http://127.0.0.1:2379"))
				.hasMessageContaining("expected: etcd://host:port[,host:port...]");
		assertThatThrownBy(() -> EtcdBootstrapClient.parseEndpoints("etcd://127.0.0.1:2379,nohost"))
				.hasMessageContaining("has 'nohost' (expected: host:port)");
		assertThatThrownBy(() -> client.leaseTtl(Duration.ofMillis(1500)))
				.hasMessageContaining("leaseTtl : PT1.5S (expected: whole seconds, >= 2 s");
		assertThatThrownBy(() -> client.prefix("a/")).hasMessageContaining("without a trailing '/'");
		assertThatThrownBy(() -> client.rankEndpoint(A, -1, 0, 0)).hasMessage("dpGroup : -1 (expected: >= 0)");
	}

	@Test
	void keysFollowTheDocumentedLayout() {
		RegistryKeys keys = new RegistryKeys("kvferry");
		HostPort v6 = HostPort.parse("[fd00::7]:8998");
		assertThat(keys.info(v6)).isEqualTo("kvferry/instances/[fd00::7]:8998/info");
		assertThat(keys.rank(v6, 1, 0, 2, 3)).isEqualTo("kvferry/instances/[fd00::7]:8998/ranks/1/0/2/3");
		assertThat(keys.parse(keys.rank(v6, 1, 0, 2, 3))).isEqualTo(new RegistryKeys.Parsed(v6, 1, 0, 2, 3));
		assertThat(keys.parse(keys.info(v6)).isInfo()).isTrue();
		assertThat(keys.parse("kvferry/instances/x:1/ranks/1/2")).isNull();
		assertThat(keys.parse("other/instances/x:1/info")).isNull();
	}
}
