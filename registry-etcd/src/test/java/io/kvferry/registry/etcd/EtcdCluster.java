package io.kvferry.registry.etcd;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.net.ssl.SSLException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.etcd.jetcd.Auth;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.auth.Permission;
import io.etcd.jetcd.options.OptionsUtil;
import io.grpc.netty.GrpcSslContexts;
import io.kvferry.HostPort;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Real etcd members for tests: each a child process listening on free loopback ports, with its data directory in a
 * temporary directory. {@link #close()} kills every member and deletes the directory; a JVM shutdown hook does the
 * same if a test run dies first.
 *
 * <p>Members serve plain {@code http://} ({@link #start(int)}) or TLS ({@link #startTls}: {@code https://}, optionally
 * requiring client certificates); {@link #enableAuth} turns etcd's user/password authentication on.
 *
 * <p>Needs Debian's {@code etcd-server} ({@code /usr/bin/etcd}) or {@code ETCD_BIN}. Without it a test is skipped with
 * a message, except in CI ({@code CI} or {@code KVFERRY_REQUIRE_ETCD} set), where it fails.
 */
public final class EtcdCluster implements AutoCloseable {

	private static final Logger LOG = LoggerFactory.getLogger(EtcdCluster.class);
	private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

	/** The root user {@link #enableAuth} creates. */
	public static final String ROOT_USER = "root";

	private final Path dir;
	private final List<Member> members = new ArrayList<>();
	private final Thread shutdownHook;
	/** Null for plain http. */
	private final EtcdTestPki tls;
	private final boolean clientCertAuth;
	/** How the members were launched, for {@link #restart}. */
	private String etcd;
	private String initialCluster;
	private String token;

	private record Member(String name, int clientPort, int peerPort, Path dataDir, Path log, Process[] process) {

		HostPort client() {
			return new HostPort("127.0.0.1", clientPort);
		}
	}

	private EtcdCluster(Path dir, EtcdTestPki tls, boolean clientCertAuth) {
		this.dir = dir;
		this.tls = tls;
		this.clientCertAuth = clientCertAuth;
		this.shutdownHook = new Thread(this::kill, "etcd-test-cleanup");
		Runtime.getRuntime().addShutdownHook(shutdownHook);
	}

	/**
	 * Starts {@code size} members forming one cluster and waits until every one answers {@code /health}.
	 *
	 * @param size members (1 or 3 in these tests)
	 * @return the running cluster
	 */
	public static EtcdCluster start(int size) {
		return start(size, null, false);
	}

	/**
	 * Starts {@code size} members serving clients over TLS only ({@code https://}) with the certificates of
	 * {@code pki}: etcd's {@code --cert-file} and {@code --key-file}, and with {@code clientCertAuth} also
	 * {@code --client-cert-auth --trusted-ca-file}, so that a client without a certificate signed by the CA is
	 * refused. Peers speak plain http among themselves.
	 *
	 * @param size members
	 * @param pki the certificates, from {@link EtcdTestPki#create}
	 * @param clientCertAuth whether clients must present a certificate the CA signed
	 * @return the running cluster
	 */
	public static EtcdCluster startTls(int size, EtcdTestPki pki, boolean clientCertAuth) {
		return start(size, Objects.requireNonNull(pki, "pki"), clientCertAuth);
	}

	private static EtcdCluster start(int size, EtcdTestPki pki, boolean clientCertAuth) {
		String etcd = etcdBinary();
		Path dir;
		try {
			dir = Files.createTempDirectory("kvferry-etcd-");
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
		EtcdCluster cluster = new EtcdCluster(dir, pki, clientCertAuth);
		try {
			int[] ports = freePorts(2 * size);
			for (int i = 0; i < size; i++) {
				cluster.members.add(new Member("m" + i, ports[2 * i], ports[2 * i + 1], dir.resolve("m" + i),
						dir.resolve("m" + i + ".log"), new Process[1]));
			}
			String initial = cluster.members.stream().map(m -> m.name + "=http://127.0.0.1:" + m.peerPort)
					.collect(Collectors.joining(","));
			String token = "kvferry-" + UUID.randomUUID();
			cluster.etcd = etcd;
			cluster.initialCluster = initial;
			cluster.token = token;
			for (Member m : cluster.members) {
				cluster.launch(etcd, m, initial, token);
			}
			for (Member m : cluster.members) {
				cluster.awaitHealthy(m);
			}
			LOG.info("etcd cluster of {} up: {}{}", size, cluster.endpoints(), pki == null ? ""
					: clientCertAuth ? " (TLS, client certificates required)" : " (TLS)");
			return cluster;
		}
		catch (RuntimeException | Error e) {
			cluster.close();
			throw e;
		}
	}

	/** @return every member's client endpoint */
	public List<HostPort> endpoints() {
		return members.stream().map(Member::client).toList();
	}

	/** @return the TLS material the members serve with, or null when they serve plain http */
	public EtcdTestPki tls() {
		return tls;
	}

	/**
	 * Turns etcd's authentication on, as an operator would with etcdctl, over jetcd's Auth API: adds the root user
	 * (password {@code rootPassword}) with the root role, a role {@code user + "-rw"} allowed to read and write every
	 * key under {@code prefix + "/"}, and {@code user} with that role, then {@code auth enable}. From then on every
	 * request needs a user.
	 *
	 * @param rootPassword the root user's password
	 * @param user a user for the registry
	 * @param password its password
	 * @param prefix the registry's key prefix, e.g. {@code kvferry}
	 */
	public void enableAuth(String rootPassword, String user, String password, String prefix) {
		ClientBuilder builder = Client.builder()
				.endpoints(endpoints().stream().map(e -> URI.create(scheme() + e)).toList());
		if (tls != null) {
			try {
				builder.sslContext(GrpcSslContexts.forClient()
						.trustManager(tls.ca().toFile())
						.keyManager(tls.clientCert().toFile(), tls.clientKey().toFile()).build());
			}
			catch (SSLException e) {
				throw new IllegalStateException(e);
			}
		}
		try (Client client = builder.build()) {
			Auth auth = client.getAuthClient();
			String role = user + "-rw";
			ByteSequence from = bytes(prefix + "/");
			auth.userAdd(bytes(ROOT_USER), bytes(rootPassword))
					.thenCompose(r -> auth.userGrantRole(bytes(ROOT_USER), bytes("root")))
					.thenCompose(r -> auth.roleAdd(bytes(role)))
					.thenCompose(r -> auth.roleGrantPermission(bytes(role), from,
							OptionsUtil.prefixEndOf(from), Permission.Type.READWRITE))
					.thenCompose(r -> auth.userAdd(bytes(user), bytes(password)))
					.thenCompose(r -> auth.userGrantRole(bytes(user), bytes(role)))
					.thenCompose(r -> auth.authEnable())
					.get(30, TimeUnit.SECONDS);
			LOG.info("etcd authentication enabled: user {} may read and write {}/", user, prefix);
		}
		catch (ExecutionException | TimeoutException e) {
			throw new IllegalStateException("cannot enable etcd authentication: " + e, e);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(e);
		}
	}

	private static ByteSequence bytes(String text) {
		return ByteSequence.from(text, StandardCharsets.UTF_8);
	}

	private String scheme() {
		return tls == null ? "http://" : "https://";
	}

	/** @return a JDK HTTP client for the members' HTTP endpoints, with the client certificate under TLS */
	private HttpClient http(Duration connectTimeout) {
		HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(connectTimeout);
		if (tls != null) {
			builder.sslContext(tls.jdkClientContext());
		}
		return builder.build();
	}

	/** @return {@code etcd://host:port,...} for every member */
	public String uri() {
		return "etcd://" + endpoints().stream().map(HostPort::toString).collect(Collectors.joining(","));
	}

	/**
	 * @return the index of the member that leads the cluster now, as member 0 sees it (asked over etcd's HTTP gateway)
	 */
	public int leader() {
		HttpClient http = http(Duration.ofSeconds(2));
		long leader = -1;
		List<Long> ids = new ArrayList<>();
		for (Member m : members) {
			HttpRequest status = HttpRequest.newBuilder(URI.create(scheme() + "127.0.0.1:" + m.clientPort
					+ "/v3/maintenance/status")).timeout(Duration.ofSeconds(5))
					.POST(HttpRequest.BodyPublishers.ofString("{}")).build();
			try {
				JsonNode answer = new ObjectMapper().readTree(http.send(status,
						HttpResponse.BodyHandlers.ofString()).body());
				ids.add(Long.parseUnsignedLong(answer.path("header").path("member_id").asText()));
				leader = Long.parseUnsignedLong(answer.path("leader").asText());
			}
			catch (IOException e) {
				throw new UncheckedIOException(e);
			}
			catch (InterruptedException e) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(e);
			}
		}
		int index = ids.indexOf(leader);
		if (index < 0) {
			throw new IllegalStateException("no member leads: leader id " + Long.toHexString(leader) + ", members "
					+ ids);
		}
		return index;
	}

	/** Kills member {@code i} as {@code kill -9} does and waits for it to be gone. */
	public void kill(int i) {
		Process p = members.get(i).process[0];
		p.destroyForcibly();
		try {
			p.waitFor();
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
		}
		LOG.info("etcd member {} killed", members.get(i).name);
	}

	/**
	 * Starts member {@code i} again on its ports, killing it first if it runs, and waits until it answers
	 * {@code /health}. With {@code wipe} its data directory is deleted first, as an operator who lost the disk does:
	 * a single member then starts as a new cluster with the same configuration, its revisions counting from 1 again.
	 *
	 * @param i the member
	 * @param wipe whether it starts with an empty data directory
	 */
	public void restart(int i, boolean wipe) {
		Member m = members.get(i);
		if (m.process[0] != null && m.process[0].isAlive()) {
			kill(i);
		}
		if (wipe) {
			delete(m.dataDir);
		}
		launch(etcd, m, initialCluster, token);
		awaitHealthy(m);
		LOG.info("etcd member {} restarted{}", m.name, wipe ? " with an empty data directory" : "");
	}

	@Override
	public void close() {
		kill();
		try {
			Runtime.getRuntime().removeShutdownHook(shutdownHook);
		}
		catch (IllegalStateException e) {
			// Already shutting down: the hook runs anyway.
		}
		delete(dir);
	}

	private static void delete(Path dir) {
		if (!Files.exists(dir)) {
			return;
		}
		try (Stream<Path> files = Files.walk(dir)) {
			files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
		}
		catch (IOException e) {
			LOG.warn("could not delete {}: {}", dir, e.toString());
		}
	}

	private void kill() {
		for (Member m : members) {
			Process p = m.process[0];
			if (p != null && p.isAlive()) {
				p.destroyForcibly();
				try {
					p.waitFor();
				}
				catch (InterruptedException e) {
					Thread.currentThread().interrupt();
				}
			}
		}
	}

	private void launch(String etcd, Member m, String initialCluster, String token) {
		String client = scheme() + "127.0.0.1:" + m.clientPort;
		String peer = "http://127.0.0.1:" + m.peerPort;
		List<String> command = new ArrayList<>(List.of(etcd, "--name", m.name, "--data-dir", m.dataDir.toString(),
				"--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
				"--initial-advertise-peer-urls", peer, "--initial-cluster", initialCluster, "--initial-cluster-token",
				token, "--initial-cluster-state", "new"));
		if (tls != null) {
			command.addAll(List.of("--cert-file", tls.serverCert().toString(), "--key-file",
					tls.serverKey().toString()));
			if (clientCertAuth) {
				command.addAll(List.of("--client-cert-auth", "--trusted-ca-file", tls.ca().toString()));
			}
		}
		ProcessBuilder pb = new ProcessBuilder(command)
				.redirectErrorStream(true)
				.redirectOutput(m.log.toFile());
		// Settings of a system etcd (ETCD_NAME, ETCD_DATA_DIR, ...) must not leak into the test's members.
		pb.environment().keySet().removeIf(k -> k.startsWith("ETCD_"));
		try {
			m.process[0] = pb.start();
		}
		catch (IOException e) {
			throw new UncheckedIOException("cannot start " + etcd, e);
		}
	}

	private void awaitHealthy(Member m) {
		HttpClient http = http(Duration.ofSeconds(1));
		HttpRequest health = HttpRequest.newBuilder(URI.create(scheme() + "127.0.0.1:" + m.clientPort + "/health"))
				.timeout(Duration.ofSeconds(2)).build();
		long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
		String last = "no answer";
		while (System.nanoTime() < deadline) {
			if (!m.process[0].isAlive()) {
				throw new IllegalStateException("etcd member " + m.name + " exited with " + m.process[0].exitValue()
						+ ": " + tail(m.log));
			}
			try {
				HttpResponse<String> r = http.send(health, HttpResponse.BodyHandlers.ofString());
				if (r.statusCode() == 200 && r.body().contains("\"true\"")) {
					return;
				}
				last = r.statusCode() + " " + r.body();
			}
			catch (IOException e) {
				last = e.toString();
			}
			catch (InterruptedException e) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(e);
			}
			// Polling etcd's health endpoint until the deadline; nothing to wait on but the answer itself.
			parkMillis(100);
		}
		throw new IllegalStateException("etcd member " + m.name + " not healthy within " + START_TIMEOUT + " (" + last
				+ "): " + tail(m.log));
	}

	private static void parkMillis(long millis) {
		java.util.concurrent.locks.LockSupport.parkNanos(Duration.ofMillis(millis).toNanos());
	}

	private static String tail(Path log) {
		try {
			List<String> lines = Files.readAllLines(log);
			return String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
		}
		catch (IOException e) {
			return "(no log: " + e + ")";
		}
	}

	/**
	 * @return the etcd binary: {@code ETCD_BIN}, else {@code etcd} on the PATH, else {@code /usr/bin/etcd}
	 */
	static String etcdBinary() {
		String configured = System.getenv("ETCD_BIN");
		if (configured != null && Files.isExecutable(Path.of(configured))) {
			return configured;
		}
		String path = System.getenv().getOrDefault("PATH", "");
		for (String d : (path + File.pathSeparator + "/usr/bin").split(File.pathSeparator)) {
			Path candidate = Path.of(d.isEmpty() ? "." : d, "etcd");
			if (Files.isExecutable(candidate)) {
				return candidate.toString();
			}
		}
		String message = "etcd is not installed (no ETCD_BIN, no etcd on the PATH, no /usr/bin/etcd): these tests "
				+ "run a real etcd; install Debian's etcd-server (apt-get install -y etcd-server), as .ci/run does";
		if (System.getenv("CI") != null || System.getenv("KVFERRY_REQUIRE_ETCD") != null) {
			return Assertions.fail(message);
		}
		Assumptions.abort(message);
		return null;
	}

	private static int[] freePorts(int n) {
		List<ServerSocket> sockets = new ArrayList<>();
		try {
			int[] ports = new int[n];
			for (int i = 0; i < n; i++) {
				ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
				sockets.add(s);
				ports[i] = s.getLocalPort();
			}
			return ports;
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
		finally {
			for (ServerSocket s : sockets) {
				try {
					s.close();
				}
				catch (IOException e) {
					// Only a port probe.
				}
			}
		}
	}
}
