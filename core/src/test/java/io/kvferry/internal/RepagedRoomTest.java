package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVSender;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * Rooms between prefill pages of 16 tokens and decode pages of 4 over the in-memory transport: what moves (a room of
 * 21 tokens, every decode slot checked, nothing outside it changed) and what is refused by name.
 */
class RepagedRoomTest {

	private static final Duration T = Duration.ofSeconds(10);
	private static final ModelShape SHAPE = new ModelShape(2, 2, 16, 2, 16, false, 0, 64, 0);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private final RankMemory prefillMem = RankMemory.prefill(SHAPE, ParallelLayout.SINGLE, 16, 4, 4);
	private PrefillKVManager prefill;
	private DecodeKVManager decode;

	private RankMemory start(ModelShape decodeShape, String decodeDtype) {
		RankMemory decodeMem = RankMemory.decode(decodeShape, ParallelLayout.SINGLE, 64, 4, 4);
		prefill = KVManagerSpec.prefill().kvArgs(prefillMem.kvArgs()).transport(transport).bootstrapClient(bootstrap)
				.bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0)).startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeMem.kvArgs().mutate().dtype(decodeDtype).build())
				.transport(transport).bootstrapClient(bootstrap).startNow();
		return decodeMem;
	}

	@AfterEach
	void close() {
		if (prefill != null) {
			prefill.disposeNow(T);
		}
		if (decode != null) {
			decode.disposeNow(T);
		}
	}

	@Test
	void aRoomOfLargePagesLandsInSmallPagesEveryDecodeSlotChecked() {
		RankMemory decodeMem = start(SHAPE.withPageSize(4), "bf16");
		// 21 tokens: 2 prefill pages (32 slots), 6 decode pages (24 slots); the last 8 prefill slots stay behind.
		int[] src = { 9, 3 };
		int[] dst = { 40, 41, 7, 8, 9, 63 };
		prefillMem.fill(30, src, 1, new int[0]);
		long before = decodeMem.checksumOutside(dst, 2, new int[0]);
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 30);
		receiver.sendMetadata(dst, 2, new int[0]);
		KVSender sender = prefill.sender(30);
		sender.init(2, 1);
		sender.send(new int[] { 9 }, new int[0]);
		sender.send(new int[] { 3 }, new int[0]);
		StepVerifier.create(receiver.completion()).verifyComplete();
		StepVerifier.create(sender.completion()).expectComplete().verify(T);
		assertThat(decodeMem.verify(30, dst, 2, new int[0])).isNull();
		assertThat(decodeMem.checksumOutside(dst, 2, new int[0])).isEqualTo(before);
	}

	@Test
	void aDtypeMismatchIsRefusedWhateverThePageSizes() {
		start(SHAPE.withPageSize(4), "fp8_e4m3");
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 31);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e)
						.hasMessageContaining("KV cache dtype mismatch: prefill bf16, decode fp8_e4m3"))
				.verify(T);
		assertThat(decode.stats().failures()).containsEntry(FailureCause.INCOMPATIBLE, 1L);
	}

	@Test
	void aPrefixThatIsNotWholePagesOnBothSidesFailsTheRoom() {
		start(SHAPE.withPageSize(4), "bf16");
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 32);
		// 4 tokens are one decode page, but a quarter of a prefill page.
		receiver.sendMetadata(4, new int[] { 1, 2, 3, 4, 5 }, -1, new int[][] { {} });
		KVSender sender = prefill.sender(32);
		sender.init(2, -1);
		sender.send(new int[] { 5, 6 }, new int[0]);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("prefix of 4 tokens")
						.hasMessageContaining("not a multiple of prefill page_size 16 and decode page_size 4"))
				.verify(T);
	}

	@Test
	void pageCountsOfAnotherTokenCountFailTheRoomNamingThePageSizes() {
		start(SHAPE.withPageSize(4), "bf16");
		KVReceiver receiver = decode.receiver(BOOTSTRAP, 33);
		// 2 prefill pages hold 17..32 tokens, which need 5..8 decode pages: 4 is too few.
		receiver.sendMetadata(new int[] { 1, 2, 3, 4 }, -1, new int[0]);
		KVSender sender = prefill.sender(33);
		sender.init(2, -1);
		sender.send(new int[] { 5, 6 }, new int[0]);
		StepVerifier.create(receiver.completion())
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("asked for 4 pages")
						.hasMessageContaining("prefill pages of 16 tokens, decode pages of 4"))
				.verify(T);
	}
}
