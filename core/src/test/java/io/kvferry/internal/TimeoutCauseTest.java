package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.BootstrapClient;
import io.kvferry.bootstrap.BootstrapException;
import io.kvferry.bootstrap.PrefillParallelInfo;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A room that times out names what it waited on: a prefill instance whose look-up keeps failing (an unreachable
 * bootstrap server or registry) ends the room's Bootstrapping at its timeout with the look-up's last failure in the
 * reason, not a bare state name. On virtual time.
 */
class TimeoutCauseTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final Duration BOOTSTRAP_TIMEOUT = Duration.ofSeconds(6);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort INSTANCE = new HostPort("prefill-a", 8998);
	// What the etcd registry says when etcd does not answer.
	private static final String UNREACHABLE = "parallel info of prefill-a:8998 on etcd [https://10.0.0.1:2379]: etcd "
			+ "did not answer within 1000 ms; last failure: cannot connect: no route to host 10.0.0.1:2379";

	private final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	private DecodeKVManager decode;

	@AfterEach
	void stop() {
		if (decode != null) {
			decode.disposeNow(T);
		}
		vts.dispose();
	}

	@Test
	void aRoomTimedOutInBootstrappingNamesTheLastFailureOfItsLookUp() {
		Unreachable registry = new Unreachable();
		decode = KVManagerSpec.decode().kvArgs(RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs())
				.transport(InMemoryKVTransport.create(vts)).bootstrapClient(registry).timer(vts)
				.bootstrapTimeout(BOOTSTRAP_TIMEOUT).startNow();
		KVReceiver receiver = decode.receiver(INSTANCE, 1);
		receiver.sendMetadata(new int[] { 1 }, -1, new int[0]);

		vts.advanceTimeBy(BOOTSTRAP_TIMEOUT.minusMillis(1));
		assertThat(receiver.poll()).isEqualTo(KVPoll.BOOTSTRAPPING);
		assertThat(registry.calls.get()).as("the look-up is retried meanwhile").isEqualTo(3);
		vts.advanceTimeBy(Duration.ofMillis(1));

		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> {
					KVTransferException failure = (KVTransferException) e;
					assertThat(failure.failureCause()).isEqualTo(FailureCause.TIMEOUT);
					assertThat(failure.reason()).startsWith("Request 1 timed out after 6s in KVPoll.BOOTSTRAPPING; the "
							+ "look-up of prefill instance prefill-a:8998 keeps failing: attempt ")
							.endsWith(" failed: " + UNREACHABLE);
				})
				.verify(T);
	}

	/** A registry that is never reached: each look-up fails after a second, with the reason. */
	private final class Unreachable implements BootstrapClient {
		final AtomicInteger calls = new AtomicInteger();

		@Override
		public Mono<Void> register(HostPort bootstrap, PrefillRegistration registration) {
			return Mono.error(new IllegalStateException("decode registers nothing"));
		}

		@Override
		public Mono<PrefillParallelInfo> parallelInfo(HostPort bootstrap) {
			return Mono.delay(Duration.ofSeconds(1), vts).doOnNext(x -> calls.incrementAndGet())
					.then(Mono.error(new BootstrapException(BootstrapException.Kind.UNREACHABLE, 0, UNREACHABLE)));
		}

		@Override
		public Mono<HostPort> rankEndpoint(HostPort bootstrap, int dpGroup, int tpRank, int ppRank) {
			return Mono.error(new IllegalStateException("never resolved"));
		}

		@Override
		public Mono<Void> health(HostPort bootstrap) {
			return Mono.empty();
		}
	}
}
