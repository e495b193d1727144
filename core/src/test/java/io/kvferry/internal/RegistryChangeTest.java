package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DisaggregationMode;
import io.kvferry.HostPort;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.DecodeKVManager;
import io.kvferry.PrefillKVManager;
import io.kvferry.KVPoll;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.bootstrap.PrefillRegistration;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** A registry that watches its ranks tells decode at once when one leaves or moves; a closed prefill withdraws. */
class RegistryChangeTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 4, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryBootstrap registry = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	@BeforeEach
	void start() {
		prefill = KVManagerSpec.prefill()
				.kvArgs(RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(registry).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.startNow();
		decode = KVManagerSpec.decode()
				.kvArgs(RankMemory.decode(SHAPE, ParallelLayout.SINGLE, 8, 2, 2).kvArgs()).transport(transport)
				.bootstrapClient(registry).startNow();
	}

	@AfterEach
	void stop() {
		prefill.disposeNow(T);
		decode.disposeNow(T);
	}

	private KVReceiver waiting(long room) {
		KVReceiver r = decode.receiver(BOOTSTRAP, room);
		r.sendMetadata(new int[] { 1 }, -1, new int[0]);
		// Prefill has the room's request: nothing is in flight when the registry speaks.
		StepVerifier.create(prefill.sender(room).states()).thenConsumeWhile(s -> s != KVPoll.WAITING_FOR_INPUT)
				.expectNext(KVPoll.WAITING_FOR_INPUT).thenCancel().verify(T);
		return r;
	}

	@Test
	void aRankThatLeavesTheRegistryFailsItsRoomsAtOnce() {
		KVReceiver r = waiting(1);
		registry.deregister(BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1",
				prefill.endpoint().port(), SHAPE.pageSize())).block(T);
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("prefill rank dp 0 tp 0 pp 0 of " + BOOTSTRAP + " left the registry"))
				.verify(T);
	}

	@Test
	void aRankThatMovesClosesTheOldConnection() {
		KVReceiver r = waiting(2);
		registry.register(BOOTSTRAP, PrefillRegistration.prefill(ParallelLayout.SINGLE, "127.0.0.1", 1,
				SHAPE.pageSize())).block(T);
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> assertThat(((KVTransferException) e).reason())
						.contains("registered another endpoint"))
				.verify(T);
	}

	@Test
	void aClosedPrefillManagerWithdrawsItsRegistration() {
		prefill.disposeNow(T);
		StepVerifier.create(registry.rankEndpoint(BOOTSTRAP, 0, 0, 0))
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("not found"))
				.verify(T);
	}
}
