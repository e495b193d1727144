package io.kvferry.bootstrap.server;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.kvferry.HostPort;
import io.kvferry.registry.etcd.EtcdTestPki;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

/** The standalone entry point's command line: help, bad options and an unusable address. */
class BootstrapServerMainTest {

	private final StringWriter out = new StringWriter();
	private final StringWriter err = new StringWriter();

	@Test
	void printsHelpAndExitsZero() {
		assertThat(run("--help")).isZero();
		assertThat(out.toString()).contains("--host", "--port", "--max-body-bytes", "8998", "0.0.0.0", "--tls-cert",
				"--tls-key", "--tls-key-password", "--[no-]metrics", "--idle-timeout-seconds",
				"--request-timeout-seconds", "--io-threads", "--max-connections", "--max-dp-rank-entries", "100000",
				"--max-lingering-refusals", "--[no-]require-auth-token",
				BootstrapServerMain.TLS_KEY_PASSWORD_ENV, "--etcd-ca", "--etcd-cert", "--etcd-key", "--etcd-user",
				"--etcd-password-file", BootstrapServerMain.ETCD_PASSWORD_ENV);
		assertThat(out.toString()).doesNotContain("--etcd-password ");
		assertThat(err.toString()).isEmpty();
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', value = { "--bogus|Unknown option", "--port abc|--port", "--port 70000|port : 70000",
			"--max-body-bytes 0|maxBodyBytes : 0", "--host|--host", "--dp-rank-entry-lifetime-seconds 0|lifetime",
			"--idle-timeout-seconds 0|idleTimeout : PT0S", "--request-timeout-seconds -1|requestTimeout : PT-1S",
			"--tls-cert cert.pem|--tls-cert and --tls-key go together",
			"--tls-key key.pem|--tls-cert and --tls-key go together",
			"--tls-cert /nonexistent/cert.pem --tls-key /nonexistent/key.pem|--tls-cert : /nonexistent/cert.pem "
					+ "(expected: a readable PEM file)",
			"--metrics=maybe|--metrics", "--io-threads 0|--io-threads : 0 (expected: >= 1)",
			"--max-connections 0|maxConnections : 0 (expected: >= 1)",
			"--max-dp-rank-entries 0|maxDpRankEntries : 0 (expected: >= 1)",
			"--max-lingering-refusals -1|maxLingeringRefusals : -1 (expected: >= 0)" })
	void exitsTwoWithAMessageForBadOptions(String args, String message) {
		assertThat(run(args.split(" "))).isEqualTo(BootstrapServerMain.EXIT_USAGE);
		assertThat(err.toString()).contains(message);
	}

	@Test
	void exitsTwoWithAMessageWhenThePortIsInUse() throws IOException {
		try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
			int port = taken.getLocalPort();
			assertThat(run("--host", "127.0.0.1", "--port", Integer.toString(port)))
					.isEqualTo(BootstrapServerMain.EXIT_USAGE);
			assertThat(err.toString()).contains("cannot listen on 127.0.0.1:" + port);
		}
	}

	@Test
	void exitsTwoWithAMessageForFilesThatAreNotPem(@TempDir Path dir) throws IOException {
		Path cert = Files.writeString(dir.resolve("cert.pem"), "not a certificate");
		Path key = Files.writeString(dir.resolve("key.pem"), "not a key");
		assertThat(run("--tls-cert", cert.toString(), "--tls-key", key.toString()))
				.isEqualTo(BootstrapServerMain.EXIT_USAGE);
		assertThat(err.toString()).contains("--tls-cert " + cert, "--tls-key " + key,
				"(expected: a PEM certificate chain and its PKCS#8 PEM private key)");
	}

	@Test
	void turnsOptionsIntoTheServerConfiguration() {
		BootstrapServerMain.Configured configured = BootstrapServerMain.configuration("--host", "[::1]", "--port",
				"0", "--idle-timeout-seconds", "7", "--request-timeout-seconds", "3", "--max-body-bytes", "100",
				"--auth-token", "t0ken", "--metrics", "--max-connections", "12", "--max-dp-rank-entries", "34",
				"--max-lingering-refusals", "5");
		try {
			BootstrapServer server = configured.server();
			assertThat(server.host()).isEqualTo("::1");
			assertThat(server.idleTimeout()).isEqualTo(Duration.ofSeconds(7));
			assertThat(server.requestTimeout()).isEqualTo(Duration.ofSeconds(3));
			assertThat(server.maxBodyBytes()).isEqualTo(100);
			assertThat(server.requiresAuthToken()).isTrue();
			assertThat(server.hasMetrics()).isTrue();
			assertThat(server.maxConnections()).isEqualTo(12);
			assertThat(server.maxDpRankEntries()).isEqualTo(34);
			assertThat(server.maxLingeringRefusals()).isEqualTo(5);
			assertThat(server.isSecure()).isFalse();
		}
		finally {
			configured.closeMetrics().run();
		}
		BootstrapServerMain.Configured defaults = BootstrapServerMain.configuration();
		try {
			assertThat(defaults.server().idleTimeout()).isEqualTo(BootstrapServer.DEFAULT_IDLE_TIMEOUT);
			assertThat(defaults.server().requestTimeout()).isEqualTo(BootstrapServer.DEFAULT_REQUEST_TIMEOUT);
			assertThat(defaults.server().hasMetrics()).isTrue();
			assertThat(defaults.server().maxDpRankEntries()).isEqualTo(BootstrapServer.DEFAULT_MAX_DP_RANK_ENTRIES);
		}
		finally {
			defaults.closeMetrics().run();
		}
	}

	@Test
	void keepsRegistrationsInEtcdWithTheRegistryOption() {
		BootstrapServerMain.Configured shared = BootstrapServerMain.configuration("--no-metrics", "--registry",
				"etcd://10.0.0.1:2379,10.0.0.2:2379", "--instance", "prefill-lb:8998");
		assertThat(shared.server().etcdEndpoints()).containsExactly(HostPort.parse("10.0.0.1:2379"),
				HostPort.parse("10.0.0.2:2379"));
		assertThat(shared.server().toString()).contains("etcd=[10.0.0.1:2379, 10.0.0.2:2379] instance=prefill-lb:8998");
		assertThat(BootstrapServerMain.configuration("--no-metrics").server().etcdEndpoints()).isEmpty();

		assertThat(run("--registry", "http://10.0.0.1:2379")).isEqualTo(2);
		assertThat(err.toString()).contains("expected: etcd://host:port[,host:port...]");
		assertThat(run("--instance", "prefill-lb:8998")).isEqualTo(2);
		assertThat(err.toString()).contains("--instance : prefill-lb:8998 (expected: only with --registry)");
	}

	@Test
	void securesTheEtcdRegistryWithItsOptions(@TempDir Path dir) throws IOException {
		EtcdTestPki pki = EtcdTestPki.create(dir);
		Path passwordFile = Files.writeString(dir.resolve("etcd-password"), "pa ss\n");
		BootstrapServerMain.Configured secured = BootstrapServerMain.configuration("--no-metrics", "--registry",
				"etcd://127.0.0.1:2379", "--etcd-ca", pki.ca().toString(), "--etcd-cert", pki.clientCert().toString(),
				"--etcd-key", pki.clientKey().toString(), "--etcd-user", "kvferry", "--etcd-password-file",
				passwordFile.toString());
		assertThat(secured.server().isEtcdSecure()).isTrue();
		assertThat(secured.server().etcdUser()).isEqualTo("kvferry");
		assertThat(secured.server().toString()).contains("tls=CA " + pki.ca() + ", client certificate "
				+ pki.clientCert()).contains("user=kvferry").doesNotContain("pa ss");
		// The password may come from the environment instead of a file; TLS without a client certificate.
		BootstrapServerMain.Configured fromEnvironment = BootstrapServerMain.configuration(
				Map.of(BootstrapServerMain.ETCD_PASSWORD_ENV, "pw"), "--no-metrics", "--registry",
				"etcd://127.0.0.1:2379", "--etcd-ca", pki.ca().toString(), "--etcd-user", "kvferry");
		assertThat(fromEnvironment.server().etcdUser()).isEqualTo("kvferry");
		assertThat(BootstrapServerMain.configuration("--no-metrics", "--registry", "etcd://127.0.0.1:2379").server()
				.isEtcdSecure()).isFalse();
	}

	@Test
	void refusesIncompleteOrBadEtcdSecurityOptions(@TempDir Path dir) throws IOException {
		EtcdTestPki pki = EtcdTestPki.create(dir);
		String registry = "--registry etcd://127.0.0.1:2379 ";
		Path empty = Files.writeString(dir.resolve("empty-password"), "\n");
		String[][] cases = {
				{ "--etcd-ca " + pki.ca(), "--etcd-ca : " + pki.ca() + " (expected: only with --registry)" },
				{ "--etcd-user kvferry", "--etcd-user : kvferry (expected: only with --registry)" },
				{ registry + "--etcd-ca " + dir.resolve("missing.pem"), "etcd TLS: CA certificate "
						+ dir.resolve("missing.pem") + ": no such file" },
				{ registry + "--etcd-ca " + pki.ca() + " --etcd-cert " + pki.clientCert(),
						"--etcd-cert and --etcd-key go together" },
				{ registry + "--etcd-cert " + pki.clientCert() + " --etcd-key " + pki.clientKey(),
						"without --etcd-ca" },
				{ registry + "--etcd-ca " + pki.ca() + " --etcd-cert " + pki.clientCert() + " --etcd-key "
						+ pki.strangerKey(), "is not the key of client certificate " + pki.clientCert() },
				{ registry + "--etcd-user kvferry", "--etcd-user : kvferry without a password (expected: "
						+ "--etcd-password-file FILE or $" + BootstrapServerMain.ETCD_PASSWORD_ENV },
				{ registry + "--etcd-user kvferry --etcd-password-file " + dir.resolve("nope"),
						"--etcd-password-file : " + dir.resolve("nope") + " (expected: a readable file; no such file)" },
				{ registry + "--etcd-user kvferry --etcd-password-file " + empty, "is empty" },
				{ registry + "--etcd-password-file " + empty, "without --etcd-user" },
				{ registry + "--etcd-password pw", "Unknown option" } };
		for (String[] c : cases) {
			err.getBuffer().setLength(0);
			assertThat(run(c[0].split(" "))).as(c[0]).isEqualTo(BootstrapServerMain.EXIT_USAGE);
			assertThat(err.toString()).as(c[0]).contains(c[1]);
		}
	}

	private int run(String... args) {
		return BootstrapServerMain.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
	}
}
