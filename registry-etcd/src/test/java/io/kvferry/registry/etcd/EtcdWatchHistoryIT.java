package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.options.GetOption;
import io.kvferry.HostPort;
import io.kvferry.bootstrap.RegistryChange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * The registry's watch when the history it would resume from is gone: etcd restarted with an empty data directory (its
 * revisions count from 1 again, below the last one the watch saw) and etcd compacted the revisions a watch cut off from
 * it would resume after. Either way the watch reads every key again, reports what changed meanwhile (a rank that did
 * not come back is removed), and reports every later change.
 */
@Timeout(120)
class EtcdWatchHistoryIT {

	private static final Duration T = Duration.ofSeconds(30);
	private static final Charset UTF8 = StandardCharsets.UTF_8;
	private static final HostPort A = HostPort.parse("prefill-a:8998");
	private static final HostPort B = HostPort.parse("prefill-b:8998");

	private EtcdCluster etcd;
	private final String prefix = "t-" + UUID.randomUUID();
	private final Sinks.Many<RegistryChange> seen = Sinks.many().replay().all();
	private Disposable watching;

	@BeforeEach
	void startEtcd() {
		etcd = EtcdCluster.start(1);
	}

	@AfterEach
	void stopEtcd() {
		if (watching != null) {
			watching.dispose();
		}
		if (etcd != null) {
			etcd.close();
		}
	}

	private EtcdBootstrapClient client(List<HostPort> endpoints, Duration ttl) {
		return EtcdBootstrapClient.create(endpoints).leaseTtl(ttl).timeout(Duration.ofSeconds(15)).prefix(prefix);
	}

	/** Watches with {@code decode} and returns once etcd established the watch: every later change is reported. */
	private void watch(EtcdBootstrapClient decode) {
		Sinks.Empty<Void> established = Sinks.empty();
		watching = decode.changes(established::tryEmitEmpty)
				.subscribe(c -> seen.emitNext(c, Sinks.EmitFailureHandler.busyLooping(T)));
		StepVerifier.create(established.asMono()).expectComplete().verify(T);
	}

	/** @return the next change about {@code instance} reported from now on, in order */
	private Flux<RegistryChange> about(HostPort instance) {
		return seen.asFlux().filter(c -> c.bootstrap().equals(instance));
	}

	private static RegistryChange moved(HostPort instance, int tp) {
		return new RegistryChange(instance, RegistryChange.Kind.RANK_MOVED, 0, tp, 0);
	}

	private static RegistryChange removed(HostPort instance, int tp) {
		return new RegistryChange(instance, RegistryChange.Kind.RANK_REMOVED, 0, tp, 0);
	}

	/** Writes keys outside the registry's prefix, so that etcd's revision is well above what a new etcd reaches here. */
	private static void raiseRevision(EtcdBootstrapClient client) {
		StepVerifier.create(client.call("raise the revision", c -> Flux.range(0, 60)
				.concatMap(i -> Mono.fromFuture(() -> c.getKVClient().put(ByteSequence.from("elsewhere/" + i, UTF8),
						ByteSequence.from("x", UTF8))))
				.then())).expectComplete().verify(T);
	}

	@Test
	void aRankGoneWithEtcdsDataIsReportedRemovedAndLaterChangesAreAllSeen() {
		EtcdBootstrapClient decode = client(etcd.endpoints(), Duration.ofSeconds(3));
		EtcdBootstrapClient live = client(etcd.endpoints(), Duration.ofSeconds(2));
		EtcdBootstrapClient hung = client(etcd.endpoints(), Duration.ofSeconds(2));
		try {
			raiseRevision(live);
			watch(decode);
			StepVerifier.create(live.register(A, EtcdBootstrapClientIT.rank(2, 0, 17000))
					.then(hung.register(A, EtcdBootstrapClientIT.rank(2, 1, 17001)))).expectComplete().verify(T);
			// A change the watch reports: from here on it has seen the registry's current revision.
			StepVerifier.create(about(A).next())
					.then(() -> live.register(A, EtcdBootstrapClientIT.rank(2, 0, 17010)).subscribe())
					.expectNext(moved(A, 0)).expectComplete().verify(T);
			// One rank's process hangs: it renews nothing any more, and its key would expire with its lease.
			hung.dispose();
			etcd.restart(0, true);
			// The hung rank's key went with etcd's data and never comes back; the live one registers again by itself.
			StepVerifier.create(about(A).filter(c -> c.kind() == RegistryChange.Kind.RANK_REMOVED).next())
					.expectNext(removed(A, 1)).expectComplete().verify(T);
			// Every later change is seen, although the new etcd's revisions are below the ones the watch saw before.
			StepVerifier.create(about(B).take(2))
					.then(() -> live.register(B, EtcdBootstrapClientIT.rank(1, 0, 18000))
							.then(live.register(B, EtcdBootstrapClientIT.rank(1, 0, 18001)))
							.then(live.deregister(B, EtcdBootstrapClientIT.rank(1, 0, 18001))).subscribe())
					.expectNext(moved(B, 0), removed(B, 0)).expectComplete().verify(T);
			// The live rank registered again within the grace: it was never reported gone.
			assertThat(seen.asFlux().take(Duration.ofMillis(100)).collectList().block(T))
					.doesNotContain(removed(A, 0));
		}
		finally {
			live.dispose();
			hung.dispose();
			decode.dispose();
		}
	}

	/** Writes a rank key as a registration would, without a lease: nothing writes it again by itself. */
	private Mono<Void> put(EtcdBootstrapClient client, int tp, int port) {
		String key = client.keys().rank(A, 0, 0, tp, 0);
		return client.call("put " + key, c -> Mono.fromFuture(() -> c.getKVClient().put(ByteSequence.from(key, UTF8),
				ByteSequence.from(RegistryCodec.endpointJson("10.0.0." + (tp + 1), port)))).then());
	}

	@Test
	void aKeyCreatedAnewAfterEtcdLostItsDataTellsTheWatchEvenPastItsOldRevision() {
		EtcdBootstrapClient writer = client(etcd.endpoints(), Duration.ofSeconds(2));
		try (TcpRelay relay = TcpRelay.start(etcd.endpoints().get(0))) {
			EtcdBootstrapClient decode = client(List.of(relay.address()), Duration.ofSeconds(2));
			try {
				watch(decode);
				StepVerifier.create(put(writer, 0, 17000).then(put(writer, 1, 17001))).expectComplete().verify(T);
				StepVerifier.create(about(A).next()).then(() -> put(writer, 0, 17010).subscribe())
						.expectNext(moved(A, 0)).expectComplete().verify(T);
				relay.cut();
				etcd.restart(0, true);
				// The new etcd passes the old revision before decode's watch is back, then one rank writes its key
				// again: its revision is above the one the watch resumes after, but the key is new to etcd.
				raiseRevision(writer);
				StepVerifier.create(put(writer, 0, 17010)).expectComplete().verify(T);
				StepVerifier.create(about(A).skip(1).next()).then(relay::restore)
						.expectNext(removed(A, 1)).expectComplete().verify(T);
			}
			finally {
				decode.dispose();
			}
		}
		finally {
			writer.dispose();
		}
	}

	@Test
	void changesCompactedAwayWhileTheWatchWasCutOffAreReported() {
		EtcdBootstrapClient writer = client(etcd.endpoints(), Duration.ofSeconds(2));
		try (TcpRelay relay = TcpRelay.start(etcd.endpoints().get(0))) {
			EtcdBootstrapClient decode = client(List.of(relay.address()), Duration.ofSeconds(2));
			try {
				watch(decode);
				StepVerifier.create(writer.register(A, EtcdBootstrapClientIT.rank(2, 0, 19000))
						.then(writer.register(A, EtcdBootstrapClientIT.rank(2, 1, 19001)))).expectComplete().verify(T);
				StepVerifier.create(about(A).next())
						.then(() -> writer.register(A, EtcdBootstrapClientIT.rank(2, 0, 19010)).subscribe())
						.expectNext(moved(A, 0)).expectComplete().verify(T);
				relay.cut();
				// While decode is cut off from etcd, one rank moves, the other leaves, and etcd compacts its history.
				StepVerifier.create(writer.register(A, EtcdBootstrapClientIT.rank(2, 1, 19011))
						.then(writer.deregister(A, EtcdBootstrapClientIT.rank(2, 0, 19010)))
						.then(writer.call("compact", c -> Mono.fromFuture(() -> c.getKVClient()
								.get(ByteSequence.from(prefix, UTF8), GetOption.builder().withCountOnly(true).build()))
								.flatMap(get -> Mono.fromFuture(() -> c.getKVClient()
										.compact(get.getHeader().getRevision())))
								.then())))
						.expectComplete().verify(T);
				StepVerifier.create(about(A).skip(1).take(2).collectList())
						.then(relay::restore)
						.assertNext(changes -> assertThat(changes).containsExactlyInAnyOrder(moved(A, 1), removed(A, 0)))
						.expectComplete().verify(T);
			}
			finally {
				decode.dispose();
			}
		}
		finally {
			writer.dispose();
		}
	}
}
