package io.kvferry.bootstrap.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.registry.etcd.EtcdBootstrapClient;
import io.kvferry.registry.etcd.EtcdCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * Bootstrap servers that keep their registrations in a real etcd answer exactly as one in-memory server given the same
 * registrations: several at once, and a new one after all were stopped.
 */
class BootstrapServerEtcdIT {

	private static final Duration T = Duration.ofSeconds(30);

	/** Today's SGLang registration with fields this server passes through, and the same instance's second rank. */
	private static final String FIRST = "{\"role\": \"Prefill\", \"attn_tp_size\": 2, \"attn_tp_rank\": 0, "
			+ "\"attn_cp_size\": 1, \"attn_cp_rank\": 0, \"attn_dp_size\": 1, \"attn_dp_rank\": 0, \"pp_size\": 1, "
			+ "\"pp_rank\": 0, \"system_dp_size\": 1, \"system_dp_rank\": 0, \"rank_ip\": \"10.0.0.1\", "
			+ "\"rank_port\": 6000, \"page_size\": 64, \"load_balance_method\": \"follow_bootstrap_room\", "
			+ "\"attn_dcp_size\": 2, \"nested\": {\"k\": \"v\"}}";
	private static final String SECOND = FIRST.replace("\"attn_tp_rank\": 0", "\"attn_tp_rank\": 1")
			.replace("\"rank_port\": 6000", "\"rank_port\": 6001")
			.replace("\"page_size\": 64,", "\"page_size\": 64, \"kv_cache_dtype\": \"fp8_e5m2\",");

	private static final List<String> QUERIES = List.of(
			"/route?prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1&target_pp_rank=-1",
			"/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1",
			"/route?prefill_dp_rank=0&prefill_cp_rank=0&target_tp_rank=1&target_pp_rank=0",
			"/route?engine_rank=0&target_dp_group=0&target_pp_rank=0",
			"/route?engine_rank=5&target_dp_group=0&target_pp_rank=0");

	private static EtcdCluster etcd;

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

	private static BootstrapServer onEtcd(HostPort instance) {
		return BootstrapServer.create().host("127.0.0.1").port(0).etcdRegistry(etcd.uri(), instance);
	}

	private static HostPort freshInstance() {
		return new HostPort("prefill-" + UUID.randomUUID().toString().substring(0, 8), 8998);
	}

	@Test
	void severalServersAnswerAsOneAndARestartLosesNothing() {
		HostPort instance = freshInstance();
		DisposableBootstrapServer memory = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		DisposableBootstrapServer a = onEtcd(instance).bindNow();
		DisposableBootstrapServer b = onEtcd(instance).bindNow();
		DisposableBootstrapServer c = null;
		EtcdBootstrapClient client = EtcdBootstrapClient.create(etcd.endpoints()).timeout(Duration.ofSeconds(15));
		try {
			TestHttp reference = new TestHttp(memory.address());
			assertThat(reference.put("/route", FIRST).statusCode()).isEqualTo(200);
			assertThat(reference.put("/route", SECOND).statusCode()).isEqualTo(200);
			// Each rank registers with another server, as behind a load balancer.
			assertThat(new TestHttp(a.address()).put("/route", FIRST).body()).isEqualTo("OK");
			assertThat(new TestHttp(b.address()).put("/route", SECOND).body()).isEqualTo("OK");

			assertAnswersLike(reference, new TestHttp(a.address()));
			assertAnswersLike(reference, new TestHttp(b.address()));

			a.disposeNow();
			b.disposeNow();
			c = onEtcd(instance).bindNow();
			assertAnswersLike(reference, new TestHttp(c.address()));

			// Ranks using the etcd registry directly see the same instance.
			StepVerifier.create(client.rankEndpoint(instance, 0, 1, 0))
					.expectNext(new HostPort("10.0.0.1", 6001))
					.expectComplete()
					.verify(T);
			StepVerifier.create(client.parallelInfo(instance))
					.expectNext(new PrefillParallelInfo(2, 1, 1, 64))
					.expectComplete()
					.verify(T);
		}
		finally {
			client.dispose();
			memory.disposeNow();
			a.disposeNow();
			b.disposeNow();
			if (c != null) {
				c.disposeNow();
			}
		}
	}

	@Test
	void aRankOutsideTheFixedSizesIsRefusedAsInMemory() {
		HostPort instance = freshInstance();
		DisposableBootstrapServer memory = BootstrapServer.create().host("127.0.0.1").port(0).bindNow();
		DisposableBootstrapServer shared = onEtcd(instance).bindNow();
		try {
			String outside = TestHttp.registration(4, 3, 1, 0, 1, 0, "10.0.0.4", 6003);
			for (TestHttp http : List.of(new TestHttp(memory.address()), new TestHttp(shared.address()))) {
				assertThat(http.put("/route", TestHttp.registration(2, 0, 1, 0, 1, 0, "10.0.0.1", 6000)).statusCode())
						.isEqualTo(200);
			}
			HttpResponse<String> expected = new TestHttp(memory.address()).put("/route", outside);
			HttpResponse<String> actual = new TestHttp(shared.address()).put("/route", outside);
			assertThat(expected.statusCode()).isEqualTo(400);
			assertThat(actual.statusCode()).isEqualTo(400);
			assertThat(actual.body()).isEqualTo(expected.body());
		}
		finally {
			memory.disposeNow();
			shared.disposeNow();
		}
	}

	@Test
	void anUnreachableEtcdIsAnswered503NamingIt() {
		DisposableBootstrapServer server = BootstrapServer.create().host("127.0.0.1").port(0)
				.etcdRegistry("etcd://127.0.0.1:1", freshInstance()).bindNow();
		try {
			HttpResponse<String> answer = new TestHttp(server.address()).get(QUERIES.get(1));
			assertThat(answer.statusCode()).isEqualTo(503);
			assertThat(answer.body()).startsWith("registry unavailable: ").contains("on etcd [http://127.0.0.1:1]");
		}
		finally {
			server.disposeNow();
		}
	}

	private static void assertAnswersLike(TestHttp reference, TestHttp actual) {
		for (String query : QUERIES) {
			HttpResponse<String> expected = reference.get(query);
			HttpResponse<String> answer = actual.get(query);
			assertThat(answer.statusCode()).as(query).isEqualTo(expected.statusCode());
			assertThat(answer.body()).as(query).isEqualTo(expected.body());
		}
	}
}
