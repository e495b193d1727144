package io.kvferry.bootstrap.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;

import io.kvferry.HostPort;
import io.kvferry.registry.etcd.EtcdBootstrapClient;
import io.kvferry.registry.etcd.EtcdCluster;
import io.kvferry.registry.etcd.EtcdTestPki;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.test.StepVerifier;

/**
 * The standalone server's command line against a real etcd that requires both a client certificate (mutual TLS) and
 * a user: with {@code --etcd-ca --etcd-cert --etcd-key --etcd-user --etcd-password-file} it keeps registrations
 * there, where kvferry ranks with the same credentials see them; with a wrong password every request is answered
 * 503 saying that etcd refused the user.
 */
class BootstrapServerSecuredEtcdIT {

	private static final Duration T = Duration.ofSeconds(30);
	private static final String PASSWORD = "pw-" + UUID.randomUUID();

	@TempDir
	static Path dir;

	private static EtcdTestPki pki;
	private static EtcdCluster etcd;

	@BeforeAll
	static void startEtcd() {
		pki = EtcdTestPki.create(dir);
		etcd = EtcdCluster.startTls(1, pki, true);
		etcd.enableAuth("root-" + UUID.randomUUID(), "kvferry", PASSWORD, "kvferry");
	}

	@AfterAll
	static void stopEtcd() {
		if (etcd != null) {
			etcd.close();
		}
	}

	private static DisposableBootstrapServer serve(HostPort instance, String password) throws IOException {
		Path passwordFile = Files.writeString(Files.createTempFile(dir, "etcd-password", ""), password + "\n");
		BootstrapServerMain.Configured configured = BootstrapServerMain.configuration("--no-metrics", "--host",
				"127.0.0.1", "--port", "0", "--registry", etcd.uri(), "--instance", instance.toString(), "--etcd-ca",
				pki.ca().toString(), "--etcd-cert", pki.clientCert().toString(), "--etcd-key",
				pki.clientKey().toString(), "--etcd-user", "kvferry", "--etcd-password-file", passwordFile.toString());
		return configured.server().bindNow();
	}

	@Test
	void registrationsGoToTheSecuredEtcd() throws IOException {
		HostPort instance = new HostPort("prefill-" + UUID.randomUUID().toString().substring(0, 8), 8998);
		DisposableBootstrapServer server = serve(instance, PASSWORD);
		EtcdBootstrapClient rank = EtcdBootstrapClient.create(etcd.endpoints())
				.tls(pki.ca(), pki.clientCert(), pki.clientKey()).credentials("kvferry", PASSWORD);
		try {
			TestHttp http = new TestHttp(server.address());
			assertThat(http.put("/route", TestHttp.registration(1, 0, 1, 0, 1, 0, "10.0.0.1", 6000)).body())
					.isEqualTo("OK");
			HttpResponse<String> route = http.get("/route?engine_rank=0&target_dp_group=0&target_pp_rank=0");
			assertThat(route.statusCode()).isEqualTo(200);
			assertThat(route.body()).contains("10.0.0.1").contains("6000");
			StepVerifier.create(rank.rankEndpoint(instance, 0, 0, 0)).expectNext(new HostPort("10.0.0.1", 6000))
					.expectComplete().verify(T);
		}
		finally {
			rank.dispose();
			server.disposeNow();
		}
	}

	@Test
	void aWrongPasswordIsAnswered503NamingAuthentication() throws IOException {
		DisposableBootstrapServer server = serve(new HostPort("prefill-wrong", 8998), "not-" + PASSWORD);
		try {
			HttpResponse<String> answer = new TestHttp(server.address())
					.get("/route?engine_rank=-1&target_dp_group=-1&target_pp_rank=-1");
			assertThat(answer.statusCode()).isEqualTo(503);
			assertThat(answer.body()).startsWith("registry unavailable: ").contains("on etcd [https://")
					.contains("authentication failed: etcd refused user 'kvferry' with the password given")
					.doesNotContain(PASSWORD);
		}
		finally {
			server.disposeNow();
		}
	}
}
