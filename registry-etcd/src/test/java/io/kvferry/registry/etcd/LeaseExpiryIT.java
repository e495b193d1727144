package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.HostPort;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.RegistryChange;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.test.StepVerifier;

/** A prefill rank killed with SIGKILL leaves the registry by itself, within its lease TTL, and decode hears of it. */
class LeaseExpiryIT {

	private static final Logger LOG = LoggerFactory.getLogger(LeaseExpiryIT.class);
	private static final Duration T = Duration.ofSeconds(30);
	private static final int TTL_SECONDS = 2;
	private static final HostPort INSTANCE = HostPort.parse("prefill-killed:8998");

	@Test
	void aPrefillRankKilledWithSigkillIsGoneWithinItsLeaseTtl() throws Exception {
		try (EtcdCluster etcd = EtcdCluster.start(1)) {
			String prefix = "lease-expiry";
			EtcdBootstrapClient decode = EtcdBootstrapClient.create(etcd.endpoints()).prefix(prefix)
					.timeout(Duration.ofSeconds(15));
			Process rank = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
					"-cp", System.getProperty("java.class.path"), PrefillRankProcess.class.getName(), etcd.uri(),
					prefix, INSTANCE.toString(), String.valueOf(TTL_SECONDS), "17000")
					.redirectErrorStream(true)
					.start();
			try {
				awaitLine(rank, PrefillRankProcess.READY).get(T.toSeconds(), TimeUnit.SECONDS);
				StepVerifier.create(decode.rankEndpoint(INSTANCE, 0, 0, 0))
						.expectNext(new HostPort("127.0.0.1", 17000))
						.expectComplete()
						.verify(T);

				AtomicLong killedAt = new AtomicLong();
				AtomicLong goneAfter = new AtomicLong();
				StepVerifier.create(RegistryWatching.changesThen(decode, () -> {
					killedAt.set(System.nanoTime());
					rank.destroyForcibly();
				}).next())
						.assertNext(change -> {
							goneAfter.set(System.nanoTime() - killedAt.get());
							assertThat(change).isEqualTo(new RegistryChange(INSTANCE, RegistryChange.Kind.RANK_REMOVED,
									0, 0, 0));
						})
						.expectComplete()
						.verify(T);
				long millis = TimeUnit.NANOSECONDS.toMillis(goneAfter.get());
				LOG.info("lease expiry after kill -9: rank key gone and the watch told decode {} ms after the kill "
						+ "(lease TTL {} s)", millis, TTL_SECONDS);
				System.out.println("LEASE-EXPIRY-MS " + millis + " ttl=" + TTL_SECONDS + "s");
				// etcd checks for expired leases every 500 ms: the key may outlive the TTL by that much.
				assertThat(millis).as("time from kill -9 to the key's deletion").isLessThanOrEqualTo(
						TTL_SECONDS * 1000L + 1000);
				StepVerifier.create(decode.rankEndpoint(INSTANCE, 0, 0, 0))
						.expectErrorSatisfies(e -> assertThat(((BootstrapException) e).kind())
								.isEqualTo(BootstrapException.Kind.NOT_FOUND))
						.verify(T);
			}
			finally {
				rank.destroyForcibly();
				rank.waitFor(30, TimeUnit.SECONDS);
				decode.dispose();
			}
		}
	}

	/** Completes when the process prints {@code expected}; everything it prints goes to this test's log. */
	private static CompletableFuture<Void> awaitLine(Process process, String expected) {
		CompletableFuture<Void> seen = new CompletableFuture<>();
		Thread reader = new Thread(() -> {
			try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
					StandardCharsets.UTF_8))) {
				for (String line; (line = in.readLine()) != null;) {
					LOG.info("[rank] {}", line);
					if (line.equals(expected)) {
						seen.complete(null);
					}
				}
				seen.completeExceptionally(new IllegalStateException("the rank process ended before printing "
						+ expected + " (exit " + process.waitFor() + ")"));
			}
			catch (Exception e) {
				seen.completeExceptionally(e);
			}
		}, "rank-output");
		reader.setDaemon(true);
		reader.start();
		return seen;
	}

}
