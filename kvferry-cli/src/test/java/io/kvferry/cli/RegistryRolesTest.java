package io.kvferry.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.HostPort;
import io.kvferry.registry.etcd.EtcdCluster;
import io.kvferry.registry.etcd.EtcdTestPki;
import io.kvferry.test.Child;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The prefill and decode roles as separate JVMs that find each other through a real etcd ({@code --registry}), as the
 * library's etcd registry does: no bootstrap server runs, {@code --bootstrap} only names the prefill instance.
 */
@Timeout(180)
class RegistryRolesTest {

	private static final ObjectMapper JSON = new ObjectMapper();
	private static final Duration START = Duration.ofSeconds(90);
	// A role's first etcd call loads and connects the whole etcd client in a fresh JVM: on a loaded machine that alone
	// took longer than the registry's default 5 s.
	private static final String ETCD_TIMEOUT = "30s";
	/**
	 * How long a decode whose registry is never reached waits before its rooms time out: long enough for the look-up's
	 * first attempt to fail (after the 3 s etcd timeout) and be named in the rooms' reasons; the third attempt had
	 * failed by 15 s.
	 */
	private static final String UNREACHED_TIMEOUT = "8s";
	private static final String INSTANCE = "prefill-a.example:8998";
	private static final String[] SHAPE = { "--layers", "2", "--kv-heads", "2", "--head-dim", "64", "--page-size",
			"16" };

	@TempDir
	Path dir;

	/** @return {@code role}, its options, then {@code registry} and the model's shape */
	private static String[] args(List<String> registry, String role, String... options) {
		List<String> all = new ArrayList<>(List.of(role));
		all.addAll(List.of(options));
		all.addAll(registry);
		all.addAll(List.of(SHAPE));
		return all.toArray(String[]::new);
	}

	@Test
	void decodeVerifiesRoomsOfAPrefillFoundInEtcd() throws Exception {
		try (EtcdCluster etcd = EtcdCluster.start(1)) {
			roomsThrough(List.of("--registry", etcd.uri(), "--etcd-timeout", ETCD_TIMEOUT), "etcd " + etcd.uri()
					+ " as instance " + INSTANCE);
		}
	}

	@Test
	void rolesReachAnEtcdOverTlsAsAUser() throws Exception {
		EtcdTestPki pki = EtcdTestPki.create(dir);
		String password = "pw-" + UUID.randomUUID();
		Path passwordFile = Files.writeString(dir.resolve("etcd-password"), password + "\n", StandardCharsets.UTF_8);
		// No client certificates: etcd would take the certificate's name as the user, and the password would not count.
		try (EtcdCluster etcd = EtcdCluster.startTls(1, pki, false)) {
			etcd.enableAuth("root-" + UUID.randomUUID(), "kvferry", password, "kvferry");
			roomsThrough(List.of("--registry", etcd.uri(), "--etcd-timeout", ETCD_TIMEOUT, "--etcd-ca",
					pki.ca().toString(), "--etcd-user", "kvferry", "--etcd-password-file", passwordFile.toString()),
					"over TLS as user kvferry");
		}
	}

	@Test
	void rolesPresentAClientCertificateToAnEtcdThatRequiresOne() throws Exception {
		EtcdTestPki pki = EtcdTestPki.create(dir);
		try (EtcdCluster etcd = EtcdCluster.startTls(1, pki, true)) {
			roomsThrough(List.of("--registry", etcd.uri(), "--etcd-timeout", ETCD_TIMEOUT, "--etcd-ca",
					pki.ca().toString(), "--etcd-cert", pki.clientCert().toString(), "--etcd-key",
					pki.clientKey().toString()), "over TLS");
		}
	}

	@Test
	void decodeAgainstATlsOnlyEtcdWithoutItsCaCouldNotRunAndItsRoomsNameEtcdAndWhy() throws Exception {
		EtcdTestPki pki = EtcdTestPki.create(dir);
		try (EtcdCluster etcd = EtcdCluster.startTls(1, pki, false)) {
			unreachableRegistry(etcd.uri(), "on etcd [http://" + etcd.endpoints().get(0) + "]");
		}
	}

	@Test
	void decodeAgainstAnEtcdNobodyServesCouldNotRunAndItsRoomsNameEtcdAndWhy() throws Exception {
		HostPort nobody;
		try (ServerSocket s = new ServerSocket()) {
			s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
			nobody = new HostPort("127.0.0.1", s.getLocalPort());
		}
		unreachableRegistry("etcd://" + nobody, "on etcd [http://" + nobody + "]");
	}

	/**
	 * A decode whose registry is never reached: every room times out in Bootstrapping naming the look-up's last
	 * failure (etcd and its address), and decode exits as a command that could not run.
	 */
	private void unreachableRegistry(String registry, String named) throws Exception {
		try (Child decode = CliChild.start("decode", args(List.of("--registry", registry, "--etcd-timeout", "3s"),
				"decode", "--bootstrap", INSTANCE, "--requests", "2", "--bootstrap-timeout", UNREACHED_TIMEOUT,
				"--json"))) {
			int status = decode.awaitExit(START);
			assertThat(status).as(decode.output()).isEqualTo(KVFerryCli.EXIT_ERROR);
			JsonNode j = JSON.readTree(decode.stdout());
			assertThat(j.get("failure_reasons").toString()).as(decode.output())
					.contains("timed out after " + UNREACHED_TIMEOUT + " in KVPoll.BOOTSTRAPPING; the look-up of prefill "
							+ "instance " + INSTANCE + " keeps failing: attempt ")
					.contains(named);
			assertThat(decode.stderr()).contains("kvferry decode: could not run: no room reached the prefill instance "
					+ INSTANCE + " (registered in etcd)");
			System.out.printf("decode against %s exited %d: %s%n", registry, status, j.get("failure_reasons"));
		}
	}

	@Test
	void aClientCertificateWithoutItsKeyIsRefusedByName() {
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(new StringWriter(), true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute(args(List.of("--registry", "etcd://127.0.0.1:1", "--etcd-ca", "ca.pem", "--etcd-cert",
				"client.pem"), "decode", "--bootstrap", INSTANCE));
		assertThat(status).isEqualTo(2);
		assertThat(err.toString()).contains("--etcd-cert and --etcd-key go together");
	}

	private void roomsThrough(List<String> registry, String readyNote) throws Exception {
		try (Child prefill = CliChild.start("prefill", args(registry, "prefill", "--bootstrap", INSTANCE, "--host",
				"127.0.0.1", "--prefill-tp", "2"))) {
			prefill.awaitLine("kvferry prefill: ready, 2 ranks .*" + java.util.regex.Pattern.quote(readyNote), START);
			try (Child decode = CliChild.start("decode", args(registry, "decode", "--bootstrap", INSTANCE,
					"--decode-tp", "2", "--requests", "4", "--concurrency", "2", "--min-tokens", "16",
					"--max-tokens", "256", "--json"))) {
				int status = decode.awaitExit(START);
				assertThat(status).as(decode.output() + prefill.output()).isZero();
				JsonNode j = JSON.readTree(decode.stdout());
				assertThat(j.get("verified").asBoolean()).isTrue();
				assertThat(j.get("completed").asInt()).isEqualTo(4);
				assertThat(j.get("failures").asInt()).isZero();
			}
		}
	}

	@Test
	void etcdOptionsWithoutTheRegistryAreRefusedByName() {
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(new StringWriter(), true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute(args(List.of("--etcd-user", "kvferry"), "decode", "--bootstrap", INSTANCE));
		assertThat(status).isEqualTo(2);
		assertThat(err.toString()).contains("--etcd-user : kvferry (expected: only with --registry)");
	}

	@Test
	void aUserWithoutAPasswordIsRefusedBeforeAnythingStarts() {
		StringWriter err = new StringWriter();
		CommandLine cl = KVFerryCli.commandLine();
		cl.setOut(new PrintWriter(new StringWriter(), true));
		cl.setErr(new PrintWriter(err, true));
		int status = cl.execute(args(List.of("--registry", "etcd://127.0.0.1:1", "--etcd-user", "kvferry",
				"--etcd-password-file", dir.resolve("missing").toString()), "prefill", "--bootstrap", INSTANCE));
		assertThat(status).isEqualTo(2);
		assertThat(err.toString()).contains("--etcd-password-file : " + dir.resolve("missing") + " cannot be read");
	}
}
