package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.UUID;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RegistryChange;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * The registry against a real etcd with authentication enabled (a root user, and a user whose role may read and write
 * the registry's prefix, then {@code auth enable}): the right password works, for calls and the watch; a wrong one,
 * an unknown user, no user at all and a prefix outside the role fail at once, each saying which.
 */
class EtcdAuthIT {

	static final Duration T = Duration.ofSeconds(20);
	/** Long enough that a failure reported well before it was not retried until the timeout. */
	static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);
	static final HostPort A = HostPort.parse("prefill-a:8998");
	static final String PREFIX = "kvferry-auth";
	static final String USER = "kvferry";
	static final String PASSWORD = "s3cret-" + UUID.randomUUID();

	static EtcdCluster etcd;

	@BeforeAll
	static void startEtcd() {
		etcd = EtcdCluster.start(1);
		etcd.enableAuth("root-" + UUID.randomUUID(), USER, PASSWORD, PREFIX);
	}

	@AfterAll
	static void stopEtcd() {
		if (etcd != null) {
			etcd.close();
		}
	}

	static PrefillRegistration rank(int tpSize, int tpRank, int port) {
		return PrefillRegistration.prefill(ParallelLayout.tp(tpSize, tpRank), "10.0.0." + (tpRank + 1), port, 16);
	}

	static EtcdBootstrapClient client() {
		return EtcdBootstrapClient.create(etcd.endpoints()).leaseTtl(Duration.ofSeconds(2)).timeout(CALL_TIMEOUT)
				.prefix(PREFIX);
	}

	@Test
	void theRightPasswordWorks() {
		EtcdBootstrapClient client = client().credentials(USER, PASSWORD);
		try {
			StepVerifier.create(client.register(A, rank(1, 0, 17000))).expectComplete().verify(T);
			StepVerifier.create(client.rankEndpoint(A, 0, 0, 0)).expectNext(new HostPort("10.0.0.1", 17000))
					.expectComplete().verify(T);
			StepVerifier.create(client.deregister(A, rank(1, 0, 17000))).expectComplete().verify(T);
		}
		finally {
			client.dispose();
		}
	}

	@Test
	void aWrongPasswordFailsNamingAuthentication() {
		BootstrapException e = failure(client().credentials(USER, "not-" + PASSWORD));
		assertThat(e.getMessage()).contains("on etcd " + where()).contains("authentication failed: etcd refused "
				+ "user 'kvferry' with the password given (etcdserver: authentication failed, invalid user ID or "
				+ "password)").doesNotContain(PASSWORD);
		assertThat(e.kind()).isEqualTo(BootstrapException.Kind.UNAUTHORIZED);
		assertThat(e.isRetryable()).isFalse();
	}

	@Test
	void anUnknownUserFailsNamingAuthentication() {
		BootstrapException e = failure(client().credentials("nobody", PASSWORD));
		assertThat(e.getMessage()).contains("authentication failed: etcd refused user 'nobody'");
		assertThat(e.kind()).isEqualTo(BootstrapException.Kind.UNAUTHORIZED);
	}

	@Test
	void noUserFailsSayingEtcdRequiresOne() {
		BootstrapException e = failure(client());
		assertThat(e.getMessage()).contains("on etcd " + where()).contains("authentication required: etcd has "
				+ "authentication enabled and this client gave no user");
		assertThat(e.kind()).isEqualTo(BootstrapException.Kind.UNAUTHORIZED);
	}

	@Test
	void aPrefixOutsideTheUsersRoleFailsNamingThePermission() {
		BootstrapException e = failure(client().credentials(USER, PASSWORD).prefix("elsewhere"));
		assertThat(e.getMessage()).contains("permission denied: etcd user 'kvferry' may not read and write keys "
				+ "under 'elsewhere/'").contains("etcdctl role grant-permission ROLE --prefix=true readwrite elsewhere/");
		assertThat(e.kind()).isEqualTo(BootstrapException.Kind.UNAUTHORIZED);
	}

	@Test
	void theRegistryWatchesWithItsUser() {
		EtcdBootstrapClient client = client().credentials(USER, PASSWORD);
		try {
			StepVerifier.create(client.register(A, rank(1, 0, 17001))).expectComplete().verify(T);
			StepVerifier.create(RegistryWatching.changesThen(client,
					() -> client.deregister(A, rank(1, 0, 17001)).subscribe(null, e -> { })).next())
					.expectNext(new RegistryChange(A, RegistryChange.Kind.RANK_REMOVED, 0, 0, 0))
					.expectComplete().verify(T);
		}
		finally {
			client.dispose();
		}
	}

	private static String where() {
		return "[http://" + etcd.endpoints().get(0) + "]";
	}

	/** @return how the client's first call failed: at once, as etcd's refusal is not retried */
	private static BootstrapException failure(EtcdBootstrapClient client) {
		try {
			long start = System.nanoTime();
			Throwable[] error = new Throwable[1];
			StepVerifier.create(client.register(A, rank(1, 0, 17000))).expectErrorSatisfies(e -> error[0] = e)
					.verify(T);
			assertThat(Duration.ofNanos(System.nanoTime() - start)).as("refusals are not retried")
					.isLessThan(CALL_TIMEOUT.dividedBy(2));
			assertThat(error[0]).isInstanceOf(BootstrapException.class)
					.hasMessageStartingWith("register rank dp=0 tp=0 pp=0 of prefill-a:8998 at 10.0.0.1:17000 on etcd");
			return (BootstrapException) error[0];
		}
		finally {
			client.dispose();
		}
	}
}
