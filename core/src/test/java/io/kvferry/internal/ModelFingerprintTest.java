package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.kvferry.DecodeKVManager;
import io.kvferry.FailureCause;
import io.kvferry.HostPort;
import io.kvferry.KVArgs;
import io.kvferry.KVLayout;
import io.kvferry.KVManager;
import io.kvferry.KVManagerSpec;
import io.kvferry.KVReceiver;
import io.kvferry.KVTransferException;
import io.kvferry.ParallelLayout;
import io.kvferry.PrefillKVManager;
import io.kvferry.harness.ModelShape;
import io.kvferry.harness.RankMemory;
import io.kvferry.spi.PeerLayout;
import io.kvferry.test.InMemoryBootstrap;
import io.kvferry.test.RoguePrefill;
import io.kvferry.transport.local.InMemoryKVTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * The two ranks of a session compare what they hold of the model in the handshake, and a pair that serves different
 * models is refused before any room: a prefill of one layer against a decode of four (same heads, dtype and page size)
 * fails decode's first room as incompatible naming both counts, whether prefill refuses the handshake or a prefill that
 * does not check announces its layout and decode refuses it; so do another model id and another KV layout. Values that
 * legitimately differ between the two sides (TP sizes, PP stages, page sizes, draft layers) are not compared.
 */
class ModelFingerprintTest {

	private static final Duration T = Duration.ofSeconds(10);
	/** 2 KV heads of 16 bf16 values, pages of 4 tokens: 256-byte pages. */
	private static final ModelShape ONE_LAYER = new ModelShape(1, 2, 16, 2, 4, false, 0, 0, 0);
	private static final ModelShape FOUR_LAYERS = ONE_LAYER.withLayers(4);
	private static final HostPort BOOTSTRAP = new HostPort("127.0.0.1", 8998);

	private final InMemoryBootstrap bootstrap = new InMemoryBootstrap();
	private final InMemoryKVTransport transport = InMemoryKVTransport.create();
	private PrefillKVManager prefill;
	private DecodeKVManager decode;
	private RoguePrefill rogue;

	@AfterEach
	void close() {
		for (KVManager m : new KVManager[] { decode, prefill }) {
			if (m != null) {
				m.disposeNow(T);
			}
		}
		if (rogue != null) {
			rogue.close();
		}
	}

	@Test
	void aOneLayerPrefillAndAFourLayerDecodeAreRefusedAtTheHandshakeNamingBothCounts() {
		start(memory(ONE_LAYER, true).kvArgs(), memory(FOUR_LAYERS, false).kvArgs());
		KVTransferException e = failed(1);
		assertThat(e.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
		assertThat(e.reason()).contains("model layer count mismatch: prefill 1, decode 4")
				.contains("the two ranks hold different models");
	}

	@Test
	void decodeRefusesAPrefillThatAnnouncesFewerLayersWithoutCheckingItself() {
		decode = KVManagerSpec.decode().kvArgs(memory(FOUR_LAYERS, false).kvArgs()).transport(transport)
				.bootstrapClient(bootstrap).stripes(1).startNow();
		rogue = RoguePrefill.start(transport, bootstrap, BOOTSTRAP, memory(ONE_LAYER, true).kvArgs(),
				(c, req) -> {
					throw new AssertionError("no room may be asked of a rank of another model: " + req);
				});
		KVTransferException e = failed(2);
		assertThat(e.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
		assertThat(e.reason()).contains("prefill rank ").contains("model layer count mismatch: prefill 1, decode 4");
	}

	@Test
	void decodeRefusesAPrefillThatDeclaresTheModelsLayersButRegistersFewer() {
		// Both declare 4 layers, so the fingerprints agree: decode's own count of the layers each side holds refuses it.
		KVArgs oneOfFour = memory(ONE_LAYER, true).kvArgs().mutate().modelLayers(4).build();
		decode = KVManagerSpec.decode().kvArgs(memory(FOUR_LAYERS, false).kvArgs().mutate().modelLayers(4).build())
				.transport(transport).bootstrapClient(bootstrap).stripes(1).startNow();
		rogue = RoguePrefill.start(transport, bootstrap, BOOTSTRAP, oneOfFour, (c, req) -> {
			throw new AssertionError("no room may be asked of a rank that lacks decode's layers: " + req);
		});
		KVTransferException e = failed(4);
		assertThat(e.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
		assertThat(e.reason()).contains("prefill rank ")
				.contains("prefill holds layers 0..0 (1 layers), decode 0..3 (4 layers)");
	}

	@Test
	void anotherModelIdIsRefusedAndAnEmptyOneIsComparedWithNone() {
		KVArgs p = memory(FOUR_LAYERS, true).kvArgs().mutate().modelId("meta-llama/Llama-3.1-8B@5206a32").build();
		KVArgs d = memory(FOUR_LAYERS, false).kvArgs().mutate().modelId("meta-llama/Llama-3.1-8B@0e9e39f").build();
		start(p, d);
		KVTransferException e = failed(3);
		assertThat(e.failureCause()).isEqualTo(FailureCause.INCOMPATIBLE);
		assertThat(e.reason()).contains("model id mismatch: prefill meta-llama/Llama-3.1-8B@5206a32, decode "
				+ "meta-llama/Llama-3.1-8B@0e9e39f");

		assertThat(mismatch(p, memory(FOUR_LAYERS, false).kvArgs())).as("decode names no model").isNull();
	}

	@Test
	void aDeclaredLayerCountIsComparedAndTheKvLayoutIsNot() {
		KVArgs nhd = memory(FOUR_LAYERS, true).kvArgs();
		KVArgs hnd = nhd.mutate().kvLayout(KVLayout.HND).build();
		// Prefill re-lays the pages as it sends: a mixed fleet is one model.
		assertThat(mismatch(nhd, hnd)).isNull();
		assertThat(ModelFingerprint.of(PeerLayout.of(hnd, ParallelLayout.SINGLE)).toString()).endsWith(", HND");
		// A PP stage of 4 layers of a 32-layer model against a decode that declares 48: refused although neither
		// side holds the whole model.
		RankMemory stage = RankMemory.prefill(FOUR_LAYERS.withLayers(8), new ParallelLayout(1, 0, 1, 0, 1, 0, 2, 0),
				16, 0, 0);
		KVArgs declared = stage.kvArgs().mutate().modelLayers(32).build();
		KVArgs other = memory(FOUR_LAYERS, false).kvArgs().mutate().modelLayers(48).build();
		assertThat(ModelFingerprint.mismatch(ModelFingerprint.of(PeerLayout.of(declared, stage.layout())),
				ModelFingerprint.of(PeerLayout.of(other, ParallelLayout.SINGLE))))
				.startsWith("model layer count mismatch: prefill 32, decode 48");
		// Undeclared, a PP stage's count says nothing of the model's.
		assertThat(ModelFingerprint.of(PeerLayout.of(stage.kvArgs(), stage.layout())).layers()).isZero();
	}

	@Test
	void valuesThatLegitimatelyDifferAreNotCompared() {
		ModelShape llama = new ModelShape(4, 8, 128, 2, 16, false, 0, 0, 0);
		// TP 1 against TP 2: heads per rank differ, the model's do not.
		RankMemory tp1 = RankMemory.prefill(llama, ParallelLayout.SINGLE, 8, 0, 0);
		RankMemory tp2 = RankMemory.decode(llama, ParallelLayout.tp(2, 1), 8, 0, 0);
		assertThat(mismatch(tp1.kvArgs(), tp1.layout(), tp2.kvArgs(), tp2.layout())).isNull();
		// Page sizes 16 and 1.
		RankMemory paged = RankMemory.decode(llama.withPageSize(1), ParallelLayout.SINGLE, 8, 0, 0);
		assertThat(mismatch(tp1.kvArgs(), paged.kvArgs())).isNull();
		// A PP stage of half the layers against a decode of them all.
		RankMemory stage = RankMemory.prefill(llama, new ParallelLayout(1, 0, 1, 0, 1, 0, 2, 1), 8, 0, 0);
		assertThat(mismatch(stage.kvArgs(), stage.layout(), tp1.kvArgs(), ParallelLayout.SINGLE)).isNull();
		// Draft layers on decode only.
		RankMemory draft = RankMemory.decode(new ModelShape(4, 8, 128, 2, 16, false, 1, 0, 0), ParallelLayout.SINGLE,
				8, 0, 0);
		assertThat(mismatch(tp1.kvArgs(), draft.kvArgs())).isNull();
		// But not the model's heads, nor its head size, nor the dtype.
		RankMemory fewerHeads = RankMemory.decode(new ModelShape(4, 4, 128, 2, 16, false, 0, 0, 0),
				ParallelLayout.SINGLE, 8, 0, 0);
		assertThat(mismatch(tp1.kvArgs(), fewerHeads.kvArgs())).startsWith("model KV head count mismatch: prefill 8, "
				+ "decode 4");
		RankMemory smallerHeads = RankMemory.decode(new ModelShape(4, 8, 64, 2, 16, false, 0, 0, 0),
				ParallelLayout.SINGLE, 8, 0, 0);
		assertThat(mismatch(tp1.kvArgs(), smallerHeads.kvArgs()))
				.startsWith("bytes per head and token (K/V) mismatch: prefill 256/256, decode 128/128");
		assertThat(mismatch(tp1.kvArgs(), tp1.kvArgs().mutate().dtype("fp8_e4m3").build()))
				.startsWith("KV cache dtype mismatch: prefill bf16, decode fp8_e4m3");
	}

	private void start(KVArgs prefillArgs, KVArgs decodeArgs) {
		prefill = KVManagerSpec.prefill().kvArgs(prefillArgs).transport(transport)
				.bootstrapClient(bootstrap).bootstrapAddress(BOOTSTRAP).bindAddress(new HostPort("127.0.0.1", 0))
				.startNow();
		decode = KVManagerSpec.decode().kvArgs(decodeArgs).transport(transport).bootstrapClient(bootstrap).stripes(1)
				.startNow();
	}

	/** @return the failure of a room asked of the instance, which must fail before any page is asked */
	private KVTransferException failed(long room) {
		KVReceiver r = decode.receiver(BOOTSTRAP, room);
		KVTransferException[] failure = new KVTransferException[1];
		StepVerifier.create(r.completion())
				.expectErrorSatisfies(e -> failure[0] = (KVTransferException) e)
				.verify(T);
		return failure[0];
	}

	private static RankMemory memory(ModelShape shape, boolean prefill) {
		return prefill ? RankMemory.prefill(shape, ParallelLayout.SINGLE, 16, 0, 0)
				: RankMemory.decode(shape, ParallelLayout.SINGLE, 16, 0, 0);
	}

	private static String mismatch(KVArgs prefill, KVArgs decode) {
		return mismatch(prefill, ParallelLayout.SINGLE, decode, ParallelLayout.SINGLE);
	}

	private static String mismatch(KVArgs prefill, ParallelLayout p, KVArgs decode, ParallelLayout d) {
		return ModelFingerprint.mismatch(ModelFingerprint.of(PeerLayout.of(prefill, p)),
				ModelFingerprint.of(PeerLayout.of(decode, d)));
	}
}
