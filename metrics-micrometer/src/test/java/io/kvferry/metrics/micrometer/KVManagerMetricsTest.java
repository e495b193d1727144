package io.kvferry.metrics.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import io.kvferry.DecodeKVManager;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.cumulative.CumulativeTimer;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.core.instrument.distribution.pause.PauseDetector;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

class KVManagerMetricsTest {

	/** Signals each timer recording: the managers record room durations on their callback scheduler. */
	private static final class SignallingRegistry extends SimpleMeterRegistry {
		final Semaphore recorded = new Semaphore(0);

		@Override
		protected Timer newTimer(Meter.Id id, DistributionStatisticConfig config, PauseDetector pauseDetector) {
			DistributionStatisticConfig merged = config.merge(DistributionStatisticConfig.builder()
					.expiry(Duration.ofMinutes(1)).build());
			return new CumulativeTimer(id, clock, merged, pauseDetector, getBaseTimeUnit(), false) {
				@Override
				protected void recordNonNegative(long amount, TimeUnit unit) {
					super.recordNonNegative(amount, unit);
					recorded.release();
				}
			};
		}
	}

	@Test
	void countsBytesRoomsAndFailures() throws InterruptedException {
		ModelShape shape = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
		SignallingRegistry registry = new SignallingRegistry();
		KVCluster c = KVCluster.builder().shape(shape).capacity(32, 4).transport(InMemoryKVTransport.create())
				.bootstrapClient(new InMemoryBootstrap()).bootstrapAddress(new HostPort("127.0.0.1", 8998))
				.customize(spec -> spec.metricsRecorder(KVManagerMetrics.recorder(registry)))
				.startNow(Duration.ofSeconds(10));
		PrefillKVManager prefill = c.prefillManagers().get(0).get(0);
		DecodeKVManager decode = c.decodeManagers().get(0);
		KVManagerMetrics p = KVManagerMetrics.bind(prefill, registry);
		KVManagerMetrics d = KVManagerMetrics.bind(decode, registry);
		assertThat(c.run(1, 40, 2, new Random(1)).block(Duration.ofSeconds(10)).ok()).isTrue();
		long bytes = 10L * shape.itemLen(1) * 4 + 64;
		assertThat(registry.get("kvferry.bytes.sent").tag("mode", "prefill").functionCounter().count()).isEqualTo(bytes);
		assertThat(registry.get("kvferry.bytes.received").tag("mode", "decode").functionCounter().count())
				.isEqualTo(bytes);
		// Decode: its duration and four phases; prefill: its duration and three phases.
		assertThat(registry.recorded.tryAcquire(9, 10, TimeUnit.SECONDS)).as("both sides' rooms recorded").isTrue();
		assertThat(registry.get("kvferry.room.duration").tag("mode", "decode").tag("outcome", "success")
				.tag("path", "in_memory").timer().count()).as("decode's room, tagged with its path").isEqualTo(1);
		assertThat(registry.get("kvferry.room.duration").tag("mode", "prefill").tag("path", "in_memory").timer()
				.count()).as("prefill's room, tagged with its own end of the path").isEqualTo(1);
		for (String phase : List.of("bootstrap", "waiting_for_peer", "wire", "landing")) {
			assertThat(registry.get("kvferry.room.phase").tag("mode", "decode").tag("outcome", "success")
					.tag("path", "in_memory").tag("phase", phase).timer().count()).as("decode's " + phase).isEqualTo(1);
		}
		for (String phase : List.of("waiting_for_peer", "waiting_for_engine", "wire")) {
			assertThat(registry.get("kvferry.room.phase").tag("mode", "prefill").tag("path", "in_memory")
					.tag("phase", phase).timer().count()).as("prefill's " + phase).isEqualTo(1);
		}
		assertThat(registry.find("kvferry.room.phase").tag("mode", "decode").tag("phase", "waiting_for_engine").timer())
				.as("an absent phase records nothing").isNull();
		Timer decodeRoom = registry.get("kvferry.room.duration").tag("mode", "decode").timer();
		double phases = registry.find("kvferry.room.phase").tag("mode", "decode").timers().stream()
				.mapToDouble(t -> t.totalTime(TimeUnit.NANOSECONDS)).sum();
		assertThat(phases).as("decode's phases add up to its room's duration")
				.isCloseTo(decodeRoom.totalTime(TimeUnit.NANOSECONDS), Offset.offset(1_000.0));
		assertThat(registry.get("kvferry.connections").tag("mode", "prefill").gauge().value()).isEqualTo(1);
		assertThat(registry.get("kvferry.heartbeats.missed").tag("mode", "decode").functionCounter().count()).isZero();

		KVReceiver gone = decode.receiver(new HostPort("127.0.0.1", 8998), 2);
		gone.abort("client gone");
		assertThatThrownBy(() -> gone.completion().block(Duration.ofSeconds(10)))
				.isInstanceOf(KVTransferException.class);
		assertThat(registry.get("kvferry.room.failures").tag("mode", "decode").tag("cause", "aborted").functionCounter()
				.count()).isEqualTo(1);
		p.dispose();
		d.dispose();
		assertThat(p.isDisposed()).isTrue();
		c.close().block(Duration.ofSeconds(10));
	}

	@Test
	void publishesDecodesCircuitBreakers() {
		ModelShape shape = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
		HostPort instance = new HostPort("127.0.0.1", 8998);
		InMemoryBootstrap registry = new InMemoryBootstrap();
		// A rank registered where nothing listens: every connection to it is refused.
		registry.register(instance, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1", 7, 4))
				.block(Duration.ofSeconds(10));
		DecodeKVManager decode = KVManagerSpec.decode()
				.kvArgs(RankMemory.decode(shape, ParallelLayout.SINGLE, 8, 2, 2).kvArgs())
				.transport(InMemoryKVTransport.create()).bootstrapClient(registry)
				.peerBreaker(1, Duration.ofHours(1)).startNow();
		SimpleMeterRegistry meters = new SimpleMeterRegistry();
		KVManagerMetrics.bind(decode, meters);
		try {
			for (long room = 1; room <= 2; room++) {
				KVReceiver r = decode.receiver(instance, room);
				assertThatThrownBy(() -> r.completion().block(Duration.ofSeconds(10)))
						.isInstanceOf(KVTransferException.class);
			}
			assertThat(meters.get("kvferry.peer.breakers.open").tag("mode", "decode").gauge().value()).isEqualTo(1);
			assertThat(meters.get("kvferry.peer.breaker.opened").functionCounter().count()).isEqualTo(1);
			assertThat(meters.get("kvferry.peer.breaker.probes.failed").functionCounter().count()).isZero();
			assertThat(meters.get("kvferry.room.failures").tag("cause", "peer_unavailable").functionCounter().count())
					.isEqualTo(1);
		}
		finally {
			decode.disposeNow(Duration.ofSeconds(10));
		}
	}
}
