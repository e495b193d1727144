package io.kvferry.registry.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.kvferry.HostPort;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.bootstrap.RegistryChange;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * A three-member etcd cluster loses its leader while prefill ranks register and decode ranks look them up: no
 * registration is lost, every look-up answers, and no rank is reported gone.
 */
class EtcdMemberKillIT {

	private static final Logger LOG = LoggerFactory.getLogger(EtcdMemberKillIT.class);
	private static final Duration T = Duration.ofSeconds(120);
	private static final int INSTANCES = 60;
	private static final int KILL_AFTER = 20;

	@Test
	void killingTheLeaderLosesNothingAndLookUpsKeepWorking() {
		try (EtcdCluster etcd = EtcdCluster.start(3)) {
			EtcdBootstrapClient prefill = EtcdBootstrapClient.create(etcd.endpoints()).prefix("member-kill")
					.leaseTtl(Duration.ofSeconds(3)).timeout(Duration.ofSeconds(15));
			EtcdBootstrapClient decode = EtcdBootstrapClient.create(etcd.endpoints()).prefix("member-kill")
					.timeout(Duration.ofSeconds(15));
			ConcurrentLinkedQueue<RegistryChange> departures = new ConcurrentLinkedQueue<>();
			Disposable watch = decode.changes().subscribe(departures::add);
			try {
				AtomicLong slowestRegister = new AtomicLong();
				AtomicLong slowestLookUp = new AtomicLong();
				AtomicLong killedAt = new AtomicLong();
				int leader = etcd.leader();
				long started = System.nanoTime();
				// Each step registers instance i, then resolves it and an earlier one; the leader dies after step 20.
				Flux<Integer> steps = Flux.range(0, INSTANCES).concatMap(i -> timed(prefill.register(instance(i),
						registration(i)), slowestRegister)
						.then(timed(decode.rankEndpoint(instance(i), 0, 0, 0), slowestLookUp))
						.doOnNext(endpoint -> assertThat(endpoint).isEqualTo(endpoint(i)))
						.then(timed(decode.rankEndpoint(instance(i / 2), 0, 0, 0), slowestLookUp))
						.doOnNext(endpoint -> assertThat(endpoint).isEqualTo(endpoint(i / 2)))
						.then(i == KILL_AFTER ? Mono.fromRunnable(() -> {
							killedAt.set(System.nanoTime());
							etcd.kill(leader);
						}).subscribeOn(Schedulers.boundedElastic()).then() : Mono.empty())
						.thenReturn(i));
				StepVerifier.create(steps).expectNextCount(INSTANCES).expectComplete().verify(T);
				long afterKill = System.nanoTime() - killedAt.get();
				LOG.info("member kill: leader m{} killed after {} of {} registrations; all {} registered and every "
						+ "look-up answered; slowest registration {} ms, slowest look-up {} ms, {} ms from kill to "
						+ "the last step, {} ms in all", leader, KILL_AFTER + 1, INSTANCES, INSTANCES,
						TimeUnit.NANOSECONDS.toMillis(slowestRegister.get()),
						TimeUnit.NANOSECONDS.toMillis(slowestLookUp.get()), TimeUnit.NANOSECONDS.toMillis(afterKill),
						TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
				System.out.println("MEMBER-KILL slowest-register-ms=" + TimeUnit.NANOSECONDS.toMillis(
						slowestRegister.get()) + " slowest-lookup-ms=" + TimeUnit.NANOSECONDS.toMillis(
						slowestLookUp.get()));

				// Two lease TTLs later every rank is still there: its lease was renewed through the survivors.
				StepVerifier.create(Mono.delay(Duration.ofSeconds(6))
						.thenMany(Flux.range(0, INSTANCES).concatMap(i -> decode.rankEndpoint(instance(i), 0, 0, 0)
								.zipWith(decode.parallelInfo(instance(i))))))
						.recordWith(java.util.ArrayList::new)
						.expectNextCount(INSTANCES)
						.consumeRecordedWith(all -> assertThat(all).allSatisfy(t -> assertThat(t.getT2())
								.isEqualTo(new PrefillParallelInfo(1, 1, 1, 16))))
						.expectComplete()
						.verify(T);
				assertThat(departures).as("ranks reported gone or moved").isEmpty();
			}
			finally {
				watch.dispose();
				prefill.dispose();
				decode.dispose();
			}
		}
	}

	private static <V> Mono<V> timed(Mono<V> call, AtomicLong slowest) {
		return Mono.defer(() -> {
			long start = System.nanoTime();
			return call.doOnSuccess(v -> slowest.accumulateAndGet(System.nanoTime() - start, Math::max));
		});
	}

	private static HostPort instance(int i) {
		return new HostPort("prefill-" + i, 8998);
	}

	private static HostPort endpoint(int i) {
		return new HostPort("127.0.0.1", 20000 + i);
	}

	private static PrefillRegistration registration(int i) {
		return PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1", 20000 + i, 16);
	}

}
