package io.kvferry.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Random;

import io.kvferry.HostPort;
import io.kvferry.MemoryRegion;
import io.kvferry.harness.KVCluster;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.Patterns;
import io.kvferry.harness.RoomResult;
import io.kvferry.harness.StagedRoom;
import io.kvferry.transport.local.InMemoryKVTransport;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** A staged room moves apart from its fill and its check, and the check still judges every byte that landed. */
class StagedRoomTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);
	// Two layers, 4 heads of 16 B per token, 4 tokens a page; aux rows of 64 B, state slots of 32 B.
	private static final ModelShape SHAPE = new ModelShape(2, 4, 8, 2, 4, false, 0, 64, 32);

	private KVCluster cluster;

	@BeforeEach
	void start() {
		cluster = KVCluster.builder().shape(SHAPE).prefill(2, 1, 1).decode(2, 1).capacity(16, 4)
				.transport(InMemoryKVTransport.create()).bootstrapClient(new InMemoryBootstrap())
				.bootstrapAddress(BOOTSTRAP).startNow(T);
	}

	@AfterEach
	void close() {
		cluster.close().block(T);
	}

	@Test
	void aStagedRoomTransfersThenVerifiesEveryByte() {
		StagedRoom staged = cluster.stage(1, 3 * SHAPE.pageSize(), 2, new Random(1));
		StepVerifier.create(staged.transfer()).expectComplete().verify(T);
		RoomResult r = staged.verify();
		assertThat(r.failure()).isNull();
		assertThat(r.bytes()).isEqualTo(cluster.decodeMemory().get(0).kvBytes(3) * 2);
		assertThat(r.latencyNanos()).isPositive();
		// Both decode ranks completed before prefill's senders heard of it.
		assertThat(staged.decodeLatencyNanos()).isPositive().isLessThanOrEqualTo(r.latencyNanos());
		assertThat(cluster.freeDecodePages()).isEqualTo(16);
	}

	@Test
	void pageRunsCoverTheRoomsPagesAndContiguousPagesAreOneRun() {
		for (int seed = 0; seed < 8; seed++) {
			StagedRoom staged = cluster.stage(10 + seed, 3 * SHAPE.pageSize(), 1, new Random(seed));
			assertThat(java.util.Arrays.stream(staged.pageRuns()).sum()).isEqualTo(3);
			StepVerifier.create(staged.transfer()).expectComplete().verify(T);
			assertThat(staged.verify().failure()).isNull();
		}
		KVCluster contiguous = KVCluster.builder().shape(SHAPE).prefill(2, 1, 1).decode(2, 1).capacity(16, 4)
				.contiguous(true).transport(InMemoryKVTransport.create()).bootstrapClient(new InMemoryBootstrap())
				.bootstrapAddress(new HostPort("127.0.0.1", 8999)).startNow(T);
		try {
			assertThat(contiguous.stage(20, 4 * SHAPE.pageSize(), 1, new Random(20)).pageRuns()).containsExactly(4);
		}
		finally {
			contiguous.close().block(T);
		}
	}

	@Test
	void aByteChangedAfterTheTransferFailsTheRoom() {
		StagedRoom staged = cluster.stage(2, 2 * SHAPE.pageSize(), 1, new Random(2));
		StepVerifier.create(staged.transfer()).expectComplete().verify(T);
		// Whatever pages the room got on decode rank 1, one of them is now wrong.
		MemoryRegion region = cluster.decodeMemory().get(1).kvArgs().kvRegions().get(0);
		for (long item = 0; item < region.itemCount(); item++) {
			PlatformDependent.putByte(region.itemAddress(item) + 5, (byte) 0x5A);
		}
		RoomResult r = staged.verify();
		assertThat(r.ok()).isFalse();
		assertThat(r.failure()).startsWith("room 2: word at 0x");
	}

	@Test
	void verifyingBeforeTheTransferOrTransferringTwiceIsRefused() {
		StagedRoom staged = cluster.stage(3, SHAPE.pageSize(), 1, new Random(3));
		assertThatThrownBy(staged::verify).isInstanceOf(IllegalStateException.class)
				.hasMessage("room 3 was not transferred");
		StepVerifier.create(staged.transfer()).expectComplete().verify(T);
		StepVerifier.create(staged.transfer()).expectErrorMessage("room 3 was already transferred").verify(T);
		assertThat(staged.verify().failure()).isNull();
	}

	@Test
	void aRoomThatFindsNoPagesFailsWithoutTransferring() {
		StagedRoom staged = cluster.stage(4, 17 * SHAPE.pageSize(), 1, new Random(4));
		StepVerifier.create(staged.transfer()).expectComplete().verify(T);
		assertThat(staged.verify().failure()).isEqualTo("out of pages for 17 pages");
	}

	@Test
	void wordsFromASeedAreTheWordsOfTheirMeaning() {
		assertThat(Patterns.word(7, 2, 1, 33, 5, 3)).isEqualTo(0x70723ba63742febeL);
		assertThat(Patterns.word(Patterns.seed(7, 2, 1, 33, 5), 3)).isEqualTo(0x70723ba63742febeL);
		assertThat(Patterns.word(7, Patterns.AUX, 0, 0, 0, 0)).isEqualTo(0x2d59e50d9f061135L);
	}
}
