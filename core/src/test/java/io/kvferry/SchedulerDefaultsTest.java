package io.kvferry;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.KVConnection;
import io.kvferry.spi.KVMessage;
import io.kvferry.spi.KVTransport;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.RecordingHandler;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A spec's default schedulers are looked up when the manager starts, not when the spec is made, so that a spec made
 * before the schedulers are replaced (virtual time, {@code Schedulers.setFactory}) runs on the new ones, as the
 * in-memory transport's connections do.
 */
class SchedulerDefaultsTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);

	@AfterEach
	void resetSchedulers() {
		VirtualTimeScheduler.reset();
	}

	@Test
	void unsetSchedulersAreTheDefaultsOfTheMomentTheyAreRead() {
		DecodeSpec spec = KVManagerSpec.decode();
		Scheduler before = spec.config().timer();
		VirtualTimeScheduler.getOrSet();
		assertThat(spec.config().timer()).isSameAs(Schedulers.parallel()).isNotSameAs(before);
		assertThat(spec.config().callbackScheduler()).isSameAs(Schedulers.boundedElastic());
		Scheduler mine = Schedulers.immediate();
		assertThat(spec.timer(mine).callbackScheduler(mine).config())
				.satisfies(c -> assertThat(c.timer()).isSameAs(mine))
				.satisfies(c -> assertThat(c.callbackScheduler()).isSameAs(mine));
	}

	@Test
	void anInMemoryTransportMadeBeforeVirtualTimeDeliversOnIt() throws InterruptedException {
		InMemoryKVTransport transport = InMemoryKVTransport.create();
		VirtualTimeScheduler vts = VirtualTimeScheduler.getOrSet();
		AtomicReference<Thread> deliveredOn = new AtomicReference<>();
		RecordingHandler accepted = new RecordingHandler() {
			@Override
			public void onMessage(KVConnection connection, KVMessage message) {
				deliveredOn.set(Thread.currentThread());
				super.onMessage(connection, message);
			}
		};
		KVTransport.Listener listener = transport.listen(new HostPort("127.0.0.1", 0), c -> accepted).block(T);
		KVConnection connected = transport.connect(listener.address(), new RecordingHandler()).block(T);
		connected.send(new KVMessage.AbortAck(3));
		vts.advanceTime();
		assertThat(accepted.nextMessage(T)).isEqualTo(new KVMessage.AbortAck(3));
		// Virtual time runs what is due on the thread that advances it: this one, not a Schedulers.single() thread.
		assertThat(deliveredOn.get()).isSameAs(Thread.currentThread());
		listener.dispose();
	}

	@Test
	void aSpecMadeBeforeVirtualTimeRunsItsTimeoutsOnIt() {
		RankMemory memory = RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 64, 8, 8);
		DecodeSpec spec = KVManagerSpec.decode().kvArgs(memory.kvArgs()).bootstrapClient(new InMemoryBootstrap())
				.bootstrapTimeout(Duration.ofSeconds(5));
		VirtualTimeScheduler vts = VirtualTimeScheduler.getOrSet();
		DecodeKVManager decode = spec.transport(InMemoryKVTransport.create(vts)).startNow(T);
		try {
			KVReceiver receiver = decode.receiver(new HostPort("127.0.0.1", 1), 1);
			assertThat(receiver.poll()).isEqualTo(KVPoll.BOOTSTRAPPING);
			vts.advanceTimeBy(Duration.ofSeconds(5));
			assertThat(receiver.poll()).as("the bootstrap timeout ran on virtual time").isEqualTo(KVPoll.FAILED);
			StepVerifier.create(receiver.completion())
					.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("timed out after 5s in KVPoll.BOOTSTRAPPING"))
					.verify(T);
		}
		finally {
			decode.disposeNow(T);
		}
	}
}
